//! WATCH: a cursor into this executor's merged event ring for the resource,
//! filtered per watcher, streamed as JSON watch events.
//!
//! The watcher holds no queue: each poll reads the ring at its position.
//! Stored frames are shared (an event's frame is encoded once for every
//! watcher); only selector transitions and Table output build per-watcher
//! bytes. A watcher whose position is trimmed away ends its stream, and its
//! client re-watches from the last revision it saw.

use super::list::{filter, list_objects, wait_not_older_than};
use super::{Api, HandlerResult, ResourceRequest};
use crate::apiextensions::conversion;
use crate::render::negotiation::Output;
use crate::render::response::{self, Render};
use crate::render::table;
use crate::request::metrics;
use crate::serving::body::{Body, ChunkStream};
use crate::serving::frames::Frames;
use crate::storage::Storage;
use bytes::Bytes;
use glommio::timer::Timer;
use http::{header, HeaderValue, Response, StatusCode};
use kubeshard_cache::event::watch_frame;
use kubeshard_cache::index::{Cursor, Read};
use kubeshard_cache::{Event, EventType, Filter, Hub, StoredObject};
use kubeshard_core::catalog::ResourceInfo;
use kubeshard_core::meta::parse_resource_version;
use kubeshard_core::status::ApiError;
use kubeshard_shards::Shutdown;
use rand::Rng;
use std::cell::RefCell;
use std::collections::VecDeque;
use std::future::Future;
use std::pin::Pin;
use std::rc::Rc;
use std::sync::Arc;
use std::task::{Context, Poll};
use std::time::{Duration, Instant};

/// The longest watch a client can ask for (one year).
const MAX_WATCH_SECONDS: u64 = 365 * 24 * 3600;

pub async fn watch(api: &Rc<Api>, rr: &ResourceRequest) -> HandlerResult {
    let q = &rr.query;
    let info = rr.resource.clone();
    let filter = filter(&info, &rr.info.namespace, &rr.info.name, q)?;
    let bookmarks = q.flag("allowWatchBookmarks");
    let rv = q.get("resourceVersion").unwrap_or("");
    let send_initial = q
        .get("sendInitialEvents")
        .map(|_| q.flag("sendInitialEvents"));
    let rv_match = q.get("resourceVersionMatch").unwrap_or("");
    if send_initial.is_some() {
        if rv_match != "NotOlderThan" {
            return Err(super::list::invalid_options(
                "resourceVersionMatch",
                "",
                "sendInitialEvents requires setting resourceVersionMatch to NotOlderThan",
            ));
        }
        if send_initial == Some(true) && !bookmarks {
            return Err(super::list::invalid_options(
                "allowWatchBookmarks",
                "",
                "sendInitialEvents requires setting allowWatchBookmarks to true",
            ));
        }
    } else if !rv_match.is_empty() {
        return Err(super::list::invalid_options(
            "resourceVersionMatch",
            rv_match,
            "resourceVersionMatch is forbidden for watch unless sendInitialEvents is provided",
        ));
    }
    let timeout = match q.get("timeoutSeconds").filter(|t| !t.is_empty()) {
        // Capped so that "now + timeout" cannot overflow; a year is as good
        // as forever for a watch.
        Some(t) => Duration::from_secs(
            t.parse::<u64>()
                .map_err(|_| ApiError::bad_request(format!("invalid timeoutSeconds: {t}")))?
                .min(MAX_WATCH_SECONDS),
        ),
        None => {
            let min = api.config.min_request_timeout.as_secs().max(1);
            Duration::from_secs(rand::thread_rng().gen_range(min..=2 * min))
        }
    };

    if let Output::PartialList(..) = rr.render.output {
        return Err(table::not_a_list_error(
            "PartialObjectMetadataList",
            &info.kind,
        ));
    }
    // A kind converting through a webhook is framed at its storage
    // version and converted a chunk at a time on its way out (and only
    // then made Table rows, from the converted objects).
    let webhook = match &rr.storage {
        Some(stored) if conversion::webhook_of(stored).is_some() => Some(stored.clone()),
        _ => None,
    };
    let framed = webhook.clone().unwrap_or_else(|| info.clone());
    let render = match webhook {
        Some(_) if rr.render.output.is_transformed() => Render::JSON,
        _ => rr.render,
    };
    let mut framer = Framer {
        as_stored: !render.output.is_transformed() && framed.is_storage_version(),
        defaults_from: framed.custom.as_ref().map_or(0, |c| c.defaults_from),
        info: framed,
        render,
        headers_sent: false,
    };
    let mut initial: VecDeque<Bytes> = VecDeque::new();
    let wants_initial = match send_initial {
        Some(b) => b,
        None => rv.is_empty() || rv == "0",
    };
    let start_rev;
    let mut initial_end_bookmark = false;
    if wants_initial {
        if let Some(n) = parse_resource_version(rv).filter(|n| *n > 0) {
            wait_not_older_than(api, n).await?;
        }
        let mut list_rr_query = rr.query.clone();
        list_rr_query.remove("limit");
        list_rr_query.remove("continue");
        list_rr_query.remove("resourceVersion");
        list_rr_query.remove("resourceVersionMatch");
        let listed = list_objects(
            api,
            &ResourceRequest {
                info: rr.info.clone(),
                resource: info.clone(),
                storage: rr.storage.clone(),
                query: list_rr_query,
                render: rr.render,
                conn: None,
                user: rr.user.clone(),
            },
            filter.clone(),
        )
        .await?;
        start_rev = listed.meta.resource_version;
        for o in &listed.items {
            initial.push_back(initial_frame(&mut framer, o));
        }
        initial_end_bookmark = send_initial == Some(true);
    } else if send_initial == Some(false) {
        start_rev = match parse_resource_version(rv) {
            Some(n) if n > 0 => {
                wait_not_older_than(api, n).await?;
                n
            }
            _ => api.storage().progress(),
        };
    } else {
        start_rev = parse_resource_version(rv)
            .ok_or_else(|| ApiError::bad_request(format!("invalid resource version: {rv}")))?;
        // A revision the server has not reached yet is waited for, as a
        // list waits; past the wait the watch ends with kube's "Too large
        // resource version" error event rather than hanging silently.
        if let Err(e) = wait_not_older_than(api, start_rev).await {
            return Ok(stream_response(
                Box::pin(OneShot(Some(error_frame(&e, rr.render)))),
                rr.render,
            ));
        }
    }

    let hub = api.exec.hub.clone();
    let cursor = {
        let mut h = hub.borrow_mut();
        h.ring(&info.storage_key).cursor_after(&filter, start_rev)
    };
    let stream: Pin<Box<dyn ChunkStream>> = match cursor {
        Err(compacted) => {
            let err = ApiError::resource_expired(format!(
                "too old resource version: {start_rev} ({compacted})"
            ));
            Box::pin(OneShot(Some(error_frame(&err, rr.render))))
        }
        Ok(cursor) => {
            if initial_end_bookmark {
                initial.push_back(bookmark_frame(&info, start_rev, true, rr.render));
            }
            let bookmark_every = bookmarks.then_some(api.config.bookmark_interval);
            hub.borrow_mut().watcher_opened();
            let stall = api.stalls.register(rr.conn.clone());
            Box::pin(Watcher {
                events: metrics::watch_series(&info.group, &info.version, &info.plural),
                sent: metrics::WatchTally::default(),
                hub,
                info,
                filter,
                framer,
                cursor,
                start_rev,
                last_rev: start_rev,
                out: initial,
                deadline: Instant::now() + timeout,
                deadline_timer: Box::pin(Timer::new(timeout)),
                bookmark_every,
                next_bookmark: Instant::now() + bookmark_every.unwrap_or(timeout),
                bookmark_timer: bookmark_every.map(|d| Box::pin(Timer::new(d))),
                timers_armed_for: None,
                shutdown: api.shutdown().clone(),
                done: false,
                stall,
            })
        }
    };
    let stream: Pin<Box<dyn ChunkStream>> = match webhook {
        Some(_) => Box::pin(ConvertingWatch {
            inner: stream,
            api: api.clone(),
            info: rr.resource.clone(),
            rows: rr.render.output.is_transformed().then(|| {
                Rc::new(RefCell::new(Framer {
                    as_stored: false,
                    defaults_from: 0,
                    info: rr.resource.clone(),
                    render: rr.render,
                    headers_sent: false,
                }))
            }),
            pending: None,
            ended: false,
        }),
        None => stream,
    };
    Ok(stream_response(stream, rr.render))
}

/// A chunk of events converted, and whether conversion failed.
type Converted = (Frames, bool);

/// A watch of a kind whose versions convert through a webhook: the
/// watcher frames objects at their storage version, and each chunk of
/// events is converted by one webhook call before it goes out. A failed
/// conversion ends the watch with an ERROR event (the client re-lists).
struct ConvertingWatch {
    inner: Pin<Box<dyn ChunkStream>>,
    api: Rc<Api>,
    info: Arc<ResourceInfo>,
    /// Frames converted objects as the Table (or metadata) the watch
    /// asked for.
    rows: Option<Rc<RefCell<Framer>>>,
    pending: Option<Pin<Box<dyn Future<Output = Converted>>>>,
    ended: bool,
}

impl ChunkStream for ConvertingWatch {
    fn poll_chunk(mut self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<Option<Frames>> {
        let this = &mut *self;
        loop {
            if let Some(p) = this.pending.as_mut() {
                let (frames, failed) = std::task::ready!(p.as_mut().poll(cx));
                this.pending = None;
                this.ended = failed;
                return Poll::Ready(Some(frames));
            }
            if this.ended {
                return Poll::Ready(None);
            }
            match std::task::ready!(this.inner.as_mut().poll_chunk(cx)) {
                None => return Poll::Ready(None),
                Some(frames) => {
                    let (api, info) = (this.api.clone(), this.info.clone());
                    let rows = this.rows.clone();
                    this.pending = Some(Box::pin(async move {
                        convert_frames(&api, &info, frames, rows.as_deref()).await
                    }));
                }
            }
        }
    }
}

/// The events of `frames` at `info`'s version (bookmarks and errors pass
/// as they are), framed by `rows` when given, and whether conversion
/// failed.
async fn convert_frames(
    api: &Api,
    info: &ResourceInfo,
    frames: Frames,
    rows: Option<&RefCell<Framer>>,
) -> Converted {
    let mut events: Vec<serde_json::Value> = frames
        .iter()
        .map(|f| serde_json::from_slice(f).unwrap_or_default())
        .collect();
    let objects: Vec<usize> = (0..events.len())
        .filter(|&i| {
            !matches!(
                events[i]["type"].as_str(),
                Some("BOOKMARK" | "ERROR") | None
            )
        })
        .collect();
    let mut values: Vec<serde_json::Value> = objects
        .iter()
        .map(|&i| events[i]["object"].take())
        .collect();
    let render = rows.map_or(Render::JSON, |r| r.borrow().render);
    if let Err(e) = conversion::convert_values(api, info, &mut values).await {
        return (error_frame(&e, render).into(), true);
    }
    for (i, v) in objects.into_iter().zip(values) {
        events[i]["object"] = v;
    }
    let mut out = Frames::default();
    for e in &events {
        let object = serde_json::to_vec(&e["object"]).expect("serializes");
        let kind = e["type"].as_str().unwrap_or("");
        match (rows, EventType::parse(kind)) {
            (Some(rows), Some(kind)) => out.push(rows.borrow_mut().frame(kind, &object, 0)),
            _ if kind == "BOOKMARK" => out.push(bookmark_event(render, &e["object"])),
            _ => out.push(event_frame(render, kind, &object)),
        }
    }
    (out, false)
}

/// A watch's 200 response around its event stream.
fn stream_response(stream: Pin<Box<dyn ChunkStream>>, render: Render) -> Response<Body> {
    let mut resp = Response::new(Body::Stream(stream));
    *resp.status_mut() = StatusCode::OK;
    let ct = match render.output {
        Output::Yaml => "application/json",
        other if other.is_protobuf() => kubeshard_core::protobuf::STREAM_CONTENT_TYPE,
        other => other.content_type(),
    };
    resp.headers_mut()
        .insert(header::CONTENT_TYPE, HeaderValue::from_static(ct));
    resp.headers_mut().insert(
        header::TRANSFER_ENCODING,
        HeaderValue::from_static("chunked"),
    );
    resp
}

/// The synthetic ADDED line for an object of the initial state: its own
/// frame when that is an ADDED one, else a new line around its JSON.
fn initial_frame(framer: &mut Framer, o: &StoredObject) -> Bytes {
    if framer.plain_at(o.revision) {
        return framer.stored(EventType::Added, o);
    }
    framer.frame(EventType::Added, o.json_slice(), o.revision)
}

/// Builds a watcher's frames in the form it asked for. A Table watch
/// sends column definitions with its first event only, as kube does.
struct Framer {
    /// Stored frames go out as they are (plain JSON at the storage
    /// version): decided once, not per event and watcher.
    as_stored: bool,
    /// Objects stored before this revision are defaulted on their way
    /// out (their schema gained defaults since; 0: none).
    defaults_from: u64,
    info: Arc<ResourceInfo>,
    render: Render,
    headers_sent: bool,
}

impl Framer {
    /// Whether the stored frame of an object stored at `revision` goes
    /// out as it is (not when it predates its schema's defaults).
    fn plain_at(&self, revision: u64) -> bool {
        self.as_stored && revision >= self.defaults_from
    }

    /// The frame of a stored object's event when it goes out as stored:
    /// the object's own (shared) frame when it was written by an event of
    /// this type, else a new frame around its encoding.
    fn stored(&mut self, kind: EventType, o: &StoredObject) -> Bytes {
        if !self.render.output.is_protobuf() {
            if o.frame_kind() == kind {
                return o.frame().clone();
            }
            return watch_frame(kind.as_str(), o.json_slice());
        }
        match o.protobuf() {
            Ok(p) if o.frame_kind() == kind => p.frame().clone(),
            Ok(p) => {
                let object = p.object();
                Bytes::from(kubeshard_core::protobuf::watch_frame(
                    kind.as_str(),
                    &object,
                ))
            }
            Err(e) => error_frame(&response::protobuf_failed(e), self.render),
        }
    }

    fn frame(&mut self, kind: EventType, object: &[u8], revision: u64) -> Bytes {
        if !self.render.output.is_transformed() {
            if self.info.reads_as_stored_at(revision) {
                return event_frame(self.render, kind.as_str(), object);
            }
            let converted =
                response::converted_json(&self.info, object).unwrap_or_else(|e| e.to_status_json());
            return event_frame(self.render, kind.as_str(), &converted);
        }
        let v: serde_json::Value = serde_json::from_slice(object).unwrap_or_default();
        let stored = Arc::new(StoredObject::encode(&self.info, &v, 0));
        let body = table::transform(
            &self.info,
            &[stored],
            self.render,
            table::Shape::Object,
            !self.headers_sent,
        )
        .unwrap_or_else(|e| serde_json::from_slice(&e.to_status_json()).unwrap_or_default());
        self.headers_sent = true;
        event_frame(
            self.render,
            kind.as_str(),
            &serde_json::to_vec(&body).expect("serializes"),
        )
    }
}

fn error_frame(err: &ApiError, render: Render) -> Bytes {
    event_frame(render, "ERROR", &err.to_status_json())
}

/// A frame for an event built on request, around an object's JSON: a
/// JSON line, or a protobuf frame when the watcher asked for protobuf.
fn event_frame(render: Render, kind: &str, object: &[u8]) -> Bytes {
    if !render.output.is_protobuf() {
        return watch_frame(kind, object);
    }
    let protobuf_frame = |kind: &str, object: &[u8]| {
        let v = serde_json::from_slice(object).map_err(|e| e.to_string())?;
        let (buf, [frame, ..]) = kubeshard_core::protobuf::encode_object(&v)?.frame(kind);
        Ok::<_, String>(Bytes::from(buf).slice(frame))
    };
    // An object that cannot be encoded ends the watch with the error, as
    // a Status (which always can be).
    protobuf_frame(kind, object)
        .or_else(|e| protobuf_frame("ERROR", &response::protobuf_failed(e).to_status_json()))
        .unwrap_or_default()
}

fn bookmark_frame(info: &ResourceInfo, revision: u64, initial_end: bool, render: Render) -> Bytes {
    let mut md = serde_json::json!({"resourceVersion": revision.to_string()});
    if initial_end {
        md["annotations"] = serde_json::json!({"k8s.io/initial-events-end": "true"});
    }
    let obj =
        serde_json::json!({"kind": info.kind, "apiVersion": info.api_version(), "metadata": md});
    bookmark_event(render, &obj)
}

/// A BOOKMARK frame for `obj`; a protobuf metadata watch's bookmarks are
/// metadata views too.
fn bookmark_event(render: Render, obj: &serde_json::Value) -> Bytes {
    let object = match render.output {
        Output::PartialObject(..) if render.output.is_protobuf() => serde_json::json!({
            "kind": "PartialObjectMetadata", "apiVersion": "meta.k8s.io/v1",
            "metadata": obj["metadata"]}),
        _ => obj.clone(),
    };
    let bytes = serde_json::to_vec(&object).expect("serializes");
    event_frame(render, "BOOKMARK", &bytes)
}

struct OneShot(Option<Bytes>);

impl ChunkStream for OneShot {
    fn poll_chunk(mut self: Pin<&mut Self>, _cx: &mut Context<'_>) -> Poll<Option<Frames>> {
        Poll::Ready(self.0.take().map(Frames::from))
    }
}

struct Watcher {
    hub: Rc<RefCell<Hub>>,
    info: Arc<ResourceInfo>,
    filter: Filter,
    framer: Framer,
    /// Position in the resource's ring, or in one index run of it when the
    /// filter names an indexed field value (a node, a namespace, a name).
    cursor: Cursor,
    /// Events at or below this were covered by the initial state.
    start_rev: u64,
    /// The newest revision this watcher has been told about.
    last_rev: u64,
    out: VecDeque<Bytes>,
    deadline: Instant,
    deadline_timer: Pin<Box<Timer>>,
    bookmark_every: Option<Duration>,
    next_bookmark: Instant,
    bookmark_timer: Option<Pin<Box<Timer>>>,
    /// The waker the timers were last armed with.
    timers_armed_for: Option<std::task::Waker>,
    shutdown: Shutdown,
    done: bool,
    stall: Rc<crate::context::stall::WatchState>,
    /// `apiserver_watch_events_*` of the resource, added to once a chunk.
    events: Arc<metrics::WatchSeries>,
    sent: metrics::WatchTally,
}

/// The frame a watcher gets for an event, if any, applying selector
/// transitions the way kube's cacher does.
fn frame_for_event(filter: &Filter, framer: &mut Framer, e: &Arc<Event>) -> Option<Bytes> {
    let now = filter.matches(&e.object);
    let before = e.prev.as_ref().is_some_and(|p| filter.matches(p));
    let kind = match (e.kind, before, now) {
        (EventType::Added, _, true) => EventType::Added,
        (EventType::Modified, true, true) => EventType::Modified,
        (EventType::Modified, false, true) => EventType::Added,
        (EventType::Modified, true, false) => EventType::Deleted,
        (EventType::Deleted, true, _) => EventType::Deleted,
        _ => return None,
    };
    let stopped_matching = kind == EventType::Deleted && e.kind == EventType::Modified;
    let plain = framer.plain_at(e.object.revision)
        && e.prev.as_ref().is_none_or(|p| framer.plain_at(p.revision));
    let protobuf = framer.render.output.is_protobuf();
    match () {
        _ if plain && kind == e.kind => Some(framer.stored(kind, &e.object)),
        _ if plain && stopped_matching && !protobuf => e.prev_deleted_frame().cloned(),
        _ if stopped_matching => {
            let prev = e.prev.as_ref()?.revision;
            Some(framer.frame(kind, &e.prev_restamped_json()?, prev))
        }
        _ => Some(framer.frame(kind, e.object.json_slice(), e.object.revision)),
    }
}

impl Drop for Watcher {
    fn drop(&mut self) {
        let mut hub = self.hub.borrow_mut();
        hub.ring(&self.info.storage_key).release(&self.cursor);
        hub.watcher_closed();
    }
}

// The watcher never relies on its own address (timers are boxed), so it
// may move freely even though some fields are not Unpin.
impl Unpin for Watcher {}

impl ChunkStream for Watcher {
    fn poll_chunk(mut self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<Option<Frames>> {
        let out = self.as_mut().next_chunk(cx);
        self.stall
            .polled(Instant::now(), matches!(out, Poll::Ready(Some(_))));
        if let Poll::Ready(Some(frames)) = &out {
            let this = &mut *self;
            for f in frames.iter() {
                this.sent.event(f.len());
            }
            this.sent.flush(&this.events);
        }
        out
    }
}

impl Watcher {
    /// The events waiting for this watcher, as many as fit one chunk
    /// (see `Frames`), or a bookmark, or the end of the stream.
    fn next_chunk(mut self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<Option<Frames>> {
        let this = &mut *self;
        let mut frames = Frames::default();
        while frames.has_room() {
            match this.out.pop_front() {
                Some(b) => frames.push(b),
                None => break,
            }
        }
        if !this.out.is_empty() {
            return Poll::Ready(Some(frames));
        }
        if this.done || this.shutdown.is_triggered() {
            return Poll::Ready((!frames.is_empty()).then_some(frames));
        }
        {
            let mut hub = this.hub.borrow_mut();
            let ring = hub.ring(&this.info.storage_key);
            while frames.has_room() {
                match ring.read(&mut this.cursor) {
                    Read::Event(e) => {
                        if e.revision <= this.start_rev {
                            continue;
                        }
                        this.last_rev = e.revision;
                        if let Some(f) = frame_for_event(&this.filter, &mut this.framer, &e) {
                            frames.push(f);
                        }
                    }
                    Read::CaughtUp => break,
                    Read::Overwritten => {
                        // Too far behind: end the stream (after what was
                        // gathered); the client re-watches from the last
                        // revision it saw.
                        this.done = true;
                        break;
                    }
                }
            }
            if !frames.is_empty() {
                return Poll::Ready(Some(frames));
            }
            if this.done {
                return Poll::Ready(None);
            }
            ring.wait(&this.cursor, cx.waker());
        }
        let now = Instant::now();
        if now >= this.deadline {
            this.done = true;
            if this.bookmark_every.is_some() {
                let rev = this.hub.borrow().released().max(this.last_rev);
                let frame = bookmark_frame(&this.info, rev, false, this.framer.render);
                return Poll::Ready(Some(frame.into()));
            }
            return Poll::Ready(None);
        }
        if let Some(every) = this.bookmark_every {
            if now >= this.next_bookmark {
                this.next_bookmark = now + every;
                this.bookmark_timer = Some(Box::pin(Timer::new(every)));
                this.timers_armed_for = None;
                let rev = this.hub.borrow().released().max(this.last_rev);
                if rev > this.start_rev || this.last_rev >= this.start_rev {
                    let frame = bookmark_frame(&this.info, rev, false, this.framer.render);
                    return Poll::Ready(Some(frame.into()));
                }
            }
        }
        // The timers only wake the task; the clock decides above. Arming
        // them on every poll (every event) cost a removal and an insertion
        // in the executor's timer tree per delivery, so they are armed
        // again only when the task's waker changes or a timer is new.
        let armed = this
            .timers_armed_for
            .as_ref()
            .is_some_and(|w| w.will_wake(cx.waker()));
        if !armed {
            let mut fired = this.deadline_timer.as_mut().poll(cx).is_ready();
            if let Some(t) = this.bookmark_timer.as_mut() {
                fired |= t.as_mut().poll(cx).is_ready();
            }
            if fired {
                cx.waker().wake_by_ref();
            }
            this.timers_armed_for = Some(cx.waker().clone());
        }
        Poll::Pending
    }
}
