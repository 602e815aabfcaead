//! One executor's API Priority and Fairness: its view of the
//! FlowSchemas and PriorityLevelConfigurations (fed by informers on this
//! executor's hub), its share of every level's seats, and the levels'
//! queues. Nothing here is shared with another executor, so admitting a
//! request takes no lock: each executor runs kube's algorithm over its
//! own share of the server's concurrency, and connections spread over
//! the executors spread the load.
//!
//! A level's seats are split between the executors (the remainder going
//! to the first ones); a limited level gets at least one seat on every
//! executor, so a small level is never closed on some of them.

use super::borrowing::{self, Demand};
use super::config::{self, FlowSchema, LimitResponse, PriorityLevel};
use super::estimate::{self, ObjectStats};
use super::metrics::{Slot, Tally};
use super::queueset::{Arrival, QueueSet, Queuing, Reason, State, Ticket};
use super::remembered::Remembered;
use super::retry::RetryAfter;
use super::shuffle;
use crate::request::{Query, RequestInfo};
use kubeshard_core::authn::UserInfo;
use serde_json::Value;
use std::cell::RefCell;
use std::collections::HashMap;
use std::future::Future;
use std::pin::Pin;
use std::rc::Rc;
use std::sync::Arc;
use std::task::{Context, Poll};
use std::time::{Duration, Instant};

/// The longest a request waits in a queue, whatever its timeout.
const MAX_WAIT: Duration = Duration::from_secs(60);

/// The stored objects as the informers last delivered them.
#[derive(Default)]
pub struct Raw {
    pub schemas: HashMap<String, Value>,
    pub levels: HashMap<String, Value>,
    pub dirty: bool,
}

pub struct Level {
    pub spec: PriorityLevel,
    /// This executor's share of the level's nominal seats, and the bounds
    /// lending and borrowing move its limit within.
    pub nominal: usize,
    pub lower: usize,
    pub upper: usize,
    /// The whole server's nominal seats (the metric kube reports).
    pub server_nominal: usize,
    pub max_seats: usize,
    pub set: QueueSet,
    pub demand: Demand,
    retry: RetryAfter,
}

impl Level {
    fn queuing(&self) -> Option<Queuing> {
        match self.spec.response {
            LimitResponse::Queue {
                queues,
                hand_size,
                queue_length_limit,
            } if !self.spec.exempt => Some(Queuing {
                queues: queues.max(1),
                hand_size: hand_size.clamp(1, queues.max(1)),
                queue_length_limit,
            }),
            _ => None,
        }
    }

    fn note_demand(&mut self, now: Instant) {
        let value = self.set.seats_in_use() + self.set.waiting_seats();
        self.demand.observe(now, value);
    }
}

/// A schema as requests use it: its rules, its series, and the headers
/// its responses carry (made once, when the configuration is compiled).
pub struct Schema {
    pub spec: FlowSchema,
    pub slot: Slot,
    pub ids: Ids,
}

pub struct Compiled {
    pub schemas: Vec<Rc<Schema>>,
    /// Classifications made under these schemas.
    pub remembered: Remembered<Rc<Schema>>,
    pub levels: HashMap<Arc<str>, Level>,
    pub stats: ObjectStats,
}

/// One executor's APF.
pub struct Dispatcher {
    pub executor: usize,
    pub executors: usize,
    /// `--max-requests-inflight` + `--max-mutating-requests-inflight`.
    pub server_limit: usize,
    pub raw: Rc<RefCell<Raw>>,
    pub state: RefCell<Compiled>,
    pub tally: Arc<parking_lot::Mutex<Tally>>,
    /// Woken when a schema or level changes (the ensurer listens).
    pub changed: Rc<event_listener::Event>,
}

/// `total` split over `n` parts, the remainder to the first ones.
pub fn share(total: usize, part: usize, n: usize) -> usize {
    let n = n.max(1);
    total / n + usize::from(part < total % n)
}

/// The flow-control identity of a request, as kube's response headers
/// carry it (the schema's and the level's uids).
#[derive(Clone, Debug)]
pub struct Ids {
    pub schema_uid: http::HeaderValue,
    pub level_uid: http::HeaderValue,
}

impl Ids {
    fn of(schema: &str, level: &str) -> Self {
        let value = |uid: &str| {
            http::HeaderValue::from_str(uid).unwrap_or(http::HeaderValue::from_static(""))
        };
        Self {
            schema_uid: value(schema),
            level_uid: value(level),
        }
    }
}

/// Seats held by an executing request, given back when dropped.
pub struct Seats {
    dispatcher: Rc<Dispatcher>,
    level: Arc<str>,
    slot: Slot,
    /// Its queue and the work it was charged there.
    queue: (Option<usize>, f64),
    seats: usize,
    mutating: bool,
    /// Held at the exempt level: nothing to give back but the count.
    exempt: bool,
    started: Instant,
    pub ids: Ids,
}

impl Drop for Seats {
    fn drop(&mut self) {
        if !self.exempt {
            let now = Instant::now();
            let mut st = self.dispatcher.state.borrow_mut();
            if let Some(level) = st.levels.get_mut(&self.level) {
                level
                    .set
                    .finish(now, self.queue, self.seats, now - self.started);
                level.note_demand(now);
            }
        }
        self.dispatcher
            .tally
            .lock()
            .finished(self.slot, self.seats, self.mutating);
    }
}

/// A request that gets no seats, with what its 429 says.
pub struct Rejected {
    pub retry_after: u64,
    pub ids: Ids,
}

impl Dispatcher {
    /// Rebuilds schemas and levels from the stored objects when they
    /// changed, keeping the queues of levels that stay.
    fn refresh(&self) {
        let mut raw = self.raw.borrow_mut();
        if !raw.dirty {
            return;
        }
        raw.dirty = false;
        let now = Instant::now();
        let mut st = self.state.borrow_mut();
        st.remembered.clear();
        let mut levels: Vec<PriorityLevel> =
            raw.levels.values().map(PriorityLevel::from_value).collect();
        for (name, proto) in super::bootstrap::mandatory_levels() {
            if !levels.iter().any(|l| &*l.name == name) {
                levels.push(proto);
            }
        }
        let shares: u64 = levels.iter().map(|l| l.shares).sum::<u64>().max(1);
        let mut next: HashMap<Arc<str>, Level> = HashMap::new();
        for spec in levels {
            let server_nominal = (self.server_limit as u64 * spec.shares).div_ceil(shares) as usize;
            let mut nominal = share(server_nominal, self.executor, self.executors);
            if !spec.exempt {
                nominal = nominal.max(1);
            }
            let lendable =
                ((nominal as u64 * spec.lendable_percent) as f64 / 100.0).round() as usize;
            let borrowing = match spec.borrowing_limit_percent {
                Some(p) => ((nominal as u64 * p) as f64 / 100.0).round() as usize,
                None => share(self.server_limit, self.executor, self.executors),
            };
            let (lower, upper) = (nominal - lendable.min(nominal), nominal + borrowing);
            let name = spec.name.clone();
            let old = st.levels.remove(&name);
            let fresh = old.is_none();
            let mut level = match old {
                Some(mut old) => {
                    old.spec = spec;
                    old
                }
                None => Level {
                    set: QueueSet::new(nominal, None, now),
                    demand: Demand::new(now),
                    retry: RetryAfter::default(),
                    spec,
                    nominal,
                    lower,
                    upper,
                    server_nominal,
                    max_seats: 1,
                },
            };
            level.nominal = nominal;
            level.lower = lower.max(usize::from(!level.spec.exempt));
            level.upper = upper.max(level.lower);
            level.server_nominal = server_nominal;
            let queuing = level.queuing();
            level.max_seats = estimate::max_seats(nominal, queuing.map(|q| q.hand_size));
            // A new level starts halfway into what it may lend; one that
            // stays keeps its limit until the next adjustment, within its
            // new bounds.
            let limit = if fresh {
                nominal - lendable.min(nominal) / 2
            } else {
                level.set.limit().clamp(level.lower, level.upper)
            };
            level.set.reconfigure(limit.max(1), queuing, now);
            next.insert(name, level);
        }
        // Requests waiting in a level that is gone: refused.
        for (_, mut gone) in st.levels.drain() {
            gone.set.reconfigure(0, None, now);
        }
        let mut schemas: Vec<FlowSchema> =
            raw.schemas.values().map(FlowSchema::from_value).collect();
        for (name, proto) in super::bootstrap::mandatory_schemas() {
            if !schemas.iter().any(|s| &*s.name == name) {
                schemas.push(proto);
            }
        }
        // A schema whose level does not exist takes part in nothing.
        schemas.retain(|s| next.contains_key(&s.level));
        let mut tally = self.tally.lock();
        st.schemas = config::ordered(schemas)
            .into_iter()
            .map(|spec| {
                let level = &next[&spec.level];
                Rc::new(Schema {
                    slot: tally.slot(&spec.level, &spec.name),
                    ids: Ids::of(&spec.uid, &level.spec.uid),
                    spec,
                })
            })
            .collect();
        st.levels = next;
        tally.levels.clear();
        for (name, l) in &st.levels {
            tally
                .levels
                .insert(name.clone(), (l.server_nominal, l.set.limit()));
        }
    }

    /// The first schema that matches, and its level; catch-all when none
    /// does.
    pub fn classify(&self, user: &UserInfo, info: &RequestInfo) -> Option<Rc<Schema>> {
        self.refresh();
        let mut st = self.state.borrow_mut();
        let Compiled {
            schemas,
            remembered,
            ..
        } = &mut *st;
        // The first schema (kube's `exempt`, for system:masters) is
        // cheaper to test than to look up; the rest are remembered.
        if let Some(first) = schemas.first().filter(|s| s.spec.matches(user, info)) {
            return Some(first.clone());
        }
        remembered.get_or(user, info, || {
            schemas
                .iter()
                .find(|s| s.spec.matches(user, info))
                .or_else(|| schemas.iter().find(|s| &*s.spec.name == "catch-all"))
                .cloned()
        })
    }

    /// Takes seats for a classified request, waiting in its level's queue
    /// until they are free or `wait` runs out.
    pub async fn admit(
        self: &Rc<Self>,
        c: Rc<Schema>,
        user: &UserInfo,
        info: &RequestInfo,
        query: &Query,
        storage_key: Option<&str>,
        wait: Duration,
    ) -> Result<Seats, Rejected> {
        let arrived = Instant::now();
        let ids = c.ids.clone();
        let level_name = c.spec.level.clone();
        let (arrival, seats, exempt) = {
            let mut st = self.state.borrow_mut();
            let Compiled { levels, stats, .. } = &mut *st;
            let Some(level) = levels.get_mut(&level_name) else {
                return Err(Rejected {
                    retry_after: 1,
                    ids,
                });
            };
            let seats = estimate::seats(info, query, storage_key, stats, level.max_seats);
            if level.spec.exempt {
                (Arrival::Execute(None, 0.0), seats, true)
            } else {
                let hash = match level.queuing() {
                    Some(q) if q.queues > 1 => {
                        shuffle::flow_hash(&c.spec.name, c.spec.flow_of(user, info))
                    }
                    _ => 0,
                };
                let arrival = level.set.arrive(arrived, hash, seats);
                level.note_demand(arrived);
                (arrival, seats, false)
            }
        };
        let slot = c.slot;
        // When it starts (a request that never waited starts when it
        // arrived: one clock read fewer on the common path).
        let mut started = arrived;
        let queue = match arrival {
            Arrival::Execute(q, charged) => (q, charged),
            Arrival::Reject(reason) => {
                return Err(self.rejected(&level_name, slot, reason, ids, arrived))
            }
            Arrival::Wait(ticket) => {
                self.tally.lock().enqueued(slot);
                let waited = Waiting {
                    ticket: ticket.clone(),
                    dispatcher: self.clone(),
                    level: level_name.clone(),
                }
                .within(wait)
                .await;
                self.tally.lock().dequeued(slot);
                started = Instant::now();
                match waited {
                    Some(()) if ticket.state() == State::Dispatched => {
                        (Some(ticket.queue.get()), ticket.work())
                    }
                    _ => {
                        return Err(self.rejected(&level_name, slot, Reason::TimeOut, ids, arrived))
                    }
                }
            }
        };
        let mutating = crate::security::maxinflight::is_mutating(info);
        self.tally
            .lock()
            .dispatched(slot, seats, started - arrived, mutating);
        Ok(Seats {
            mutating,
            exempt,
            dispatcher: self.clone(),
            level: level_name,
            slot,
            queue,
            seats,
            started,
            ids,
        })
    }

    fn rejected(
        &self,
        level: &Arc<str>,
        slot: Slot,
        reason: Reason,
        ids: Ids,
        arrived: Instant,
    ) -> Rejected {
        let retry_after = self
            .state
            .borrow_mut()
            .levels
            .get_mut(level)
            .map_or(1, |l| l.retry.dropped(unix_seconds()));
        self.tally.lock().rejected(slot, reason, arrived.elapsed());
        Rejected { retry_after, ids }
    }

    /// kube's periodic borrowing adjustment: each level's limit moves
    /// between what it keeps and what it may borrow, toward its recent
    /// demand, the executor's seats shared out fairly.
    pub fn adjust(&self) {
        self.refresh();
        let now = Instant::now();
        let mut st = self.state.borrow_mut();
        let limits = borrowing::allocate(&mut st.levels, now);
        let mut tally = self.tally.lock();
        for (name, limit) in limits {
            if let Some(level) = st.levels.get_mut(&name) {
                let queuing = level.queuing();
                level.set.reconfigure(limit, queuing, now);
                tally.levels.insert(name, (level.server_nominal, limit));
            }
        }
    }

    pub fn set_stats(&self, stats: ObjectStats) {
        self.state.borrow_mut().stats = stats;
    }
}

fn unix_seconds() -> u64 {
    std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .map_or(0, |d| d.as_secs())
}

/// Waits for a ticket to be dispatched; if dropped first (time-out or the
/// client left) the ticket leaves its queue.
struct Waiting {
    ticket: Rc<Ticket>,
    dispatcher: Rc<Dispatcher>,
    level: Arc<str>,
}

impl Waiting {
    /// Some when dispatched within `wait`.
    async fn within(self, wait: Duration) -> Option<()> {
        futures_lite::future::or(async { Some(self.await) }, async {
            glommio::timer::sleep(wait).await;
            None
        })
        .await
        .flatten()
    }
}

impl Future for Waiting {
    type Output = Option<()>;

    fn poll(self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<Option<()>> {
        match self.ticket.state() {
            State::Dispatched => Poll::Ready(Some(())),
            State::Waiting if self.ticket.rejected.get() => Poll::Ready(None),
            State::Waiting => {
                self.ticket.park(cx.waker());
                Poll::Pending
            }
        }
    }
}

impl Drop for Waiting {
    fn drop(&mut self) {
        if self.ticket.state() == State::Waiting {
            if let Ok(mut st) = self.dispatcher.state.try_borrow_mut() {
                if let Some(level) = st.levels.get_mut(&self.level) {
                    level.set.cancel(&self.ticket);
                    level.note_demand(Instant::now());
                }
            }
        }
    }
}

/// How long a request may wait in a queue: a quarter of its time, at
/// most a minute (kube's rule).
pub fn wait_limit(budget: Duration) -> Duration {
    (budget / 4).min(MAX_WAIT)
}
