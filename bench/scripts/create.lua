-- wrk: POST unique ConfigMaps of ~1 KiB. With STOP_AFTER set, each thread
-- stops after that many responses (used to load an exact object count).
local counter = 0
local thread_id = 0
local stop_after = tonumber(os.getenv("STOP_AFTER") or "0")
-- Names must be unique across runs against the same server.
local prefix = os.getenv("PREFIX") or tostring(os.time())
local payload = string.rep("x", 1024)
local threads = {}

function setup(thread)
  thread:set("id", #threads)
  table.insert(threads, thread)
end

function init(args)
  thread_id = id
  wrk.method = "POST"
  wrk.headers["Content-Type"] = "application/json"
end

function request()
  counter = counter + 1
  local body = '{"apiVersion":"v1","kind":"ConfigMap","metadata":{"name":"cm-' .. prefix .. '-' ..
    thread_id .. '-' .. counter .. '"},"data":{"payload":"' .. payload .. '"}}'
  return wrk.format(nil, nil, nil, body)
end

local done = 0
function response(status, headers, body)
  if status ~= 201 then
    io.stderr:write("unexpected status " .. status .. "\n")
  end
  done = done + 1
  if stop_after > 0 and done >= stop_after then
    wrk.thread:stop()
  end
end
