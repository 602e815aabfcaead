"""An informer-style client on the official `kubernetes` Python package.

It lists ConfigMaps, then watches from the list's resourceVersion, applying
events to a local cache; server-side timeouts and bookmarks move it along,
and a 410 makes it re-list, exactly as client-go's reflector does. After
`--seconds` it prints its cache as JSON: {"namespace/name": resourceVersion}.

Usage: informer.py --host URL --namespace NS --seconds S --pause-after N
                   --resume-file PATH
(`--pause-after N` stops after the N-th watch session, says "paused" on
stderr and waits until PATH exists, so the writer can push the history
window past it and force a 410; the pause does not count in S.)
"""
import argparse
import json
import os
import sys
import time

from kubernetes import client, watch
from kubernetes.client.rest import ApiException


def main():
    p = argparse.ArgumentParser()
    p.add_argument("--host", required=True)
    p.add_argument("--namespace", required=True)
    p.add_argument("--seconds", type=float, required=True)
    p.add_argument("--pause-after", type=int, default=-1)
    p.add_argument("--resume-file", default=None)
    args = p.parse_args()

    cfg = client.Configuration()
    cfg.host = args.host
    api = client.CoreV1Api(client.ApiClient(cfg))
    cache = {}
    stats = {"lists": 0, "sessions": 0, "relists_after_410": 0, "bookmarks": 0, "events": 0}

    def relist():
        lst = api.list_namespaced_config_map(args.namespace)
        cache.clear()
        for item in lst.items:
            cache[f"{item.metadata.namespace}/{item.metadata.name}"] = item.metadata.resource_version
        stats["lists"] += 1
        return lst.metadata.resource_version

    rv = relist()
    deadline = time.time() + args.seconds
    while time.time() < deadline:
        w = watch.Watch()
        try:
            for event in w.stream(
                api.list_namespaced_config_map,
                args.namespace,
                resource_version=rv,
                timeout_seconds=1,
                allow_watch_bookmarks=True,
            ):
                obj = event["object"]
                if event["type"] == "ERROR":
                    # Some client versions hand the Status through as a dict
                    # instead of raising.
                    status = event.get("raw_object", obj)
                    raise ApiException(status=status.get("code"), reason=status.get("message"))
                if event["type"] == "BOOKMARK":
                    # The client hands bookmarks through undecoded.
                    rv = event["raw_object"]["metadata"]["resourceVersion"]
                    stats["bookmarks"] += 1
                    continue
                rv = obj.metadata.resource_version
                stats["events"] += 1
                key = f"{obj.metadata.namespace}/{obj.metadata.name}"
                if event["type"] == "DELETED":
                    cache.pop(key, None)
                else:
                    cache[key] = obj.metadata.resource_version
        except ApiException as e:
            if e.status != 410:
                raise
            stats["relists_after_410"] += 1
            rv = relist()
        stats["sessions"] += 1
        if stats["sessions"] == args.pause_after:
            paused_at = time.time()
            print("paused", file=sys.stderr, flush=True)
            while not os.path.exists(args.resume_file) and time.time() < paused_at + 60:
                time.sleep(0.02)
            deadline += time.time() - paused_at
    print(json.dumps({"cache": cache, "stats": stats}))


if __name__ == "__main__":
    main()
