//! Fair queuing for one limited priority level on one executor.
//!
//! Seats are the unit of concurrency: a request holds as many as its
//! work estimate says while it executes. When the level has no seat for
//! a request it waits in one of the level's queues; which one is chosen
//! by shuffle sharding (a hand of queues dealt from the flow's hash, the
//! least loaded of the hand taken), so one heavy flow fills only its own
//! few queues and other flows almost always find a short one.
//!
//! Queues are served in virtual-time order, as kube does: each queue has
//! the virtual time (`next_r`, in seat-seconds) at which its next request
//! would start if every active queue got an equal share of the seats;
//! the waiting request whose queue's `next_r` plus its own work is least
//! goes first. A request is charged the level's recent mean service
//! time when it starts and corrected by its real one when it ends, so a
//! flow of slow requests gets fewer turns. Time is passed in, so the set is a plain
//! state machine the dispatcher drives and tests run without a clock.

use super::shuffle;
use std::cell::{Cell, RefCell};
use std::collections::VecDeque;
use std::rc::Rc;
use std::task::Waker;
use std::time::{Duration, Instant};

/// The service time a request is assumed to take before the level has
/// seen any finish (kube's constant estimate).
pub const ASSUMED_SERVICE: Duration = Duration::from_millis(3);

/// Weight of one finished request in the mean service time.
const SERVICE_WEIGHT: f64 = 0.05;

/// One seat in this many of a queuing level (at least one) is kept for
/// queues with nothing executing (see [`QueueSet::fits_in`]).
const RESERVE_SHARE: usize = 10;

/// Why a request was turned away (kube's `reason` label values).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Reason {
    QueueFull,
    ConcurrencyLimit,
    TimeOut,
}

impl Reason {
    pub fn label(self) -> &'static str {
        match self {
            Reason::QueueFull => "queue-full",
            Reason::ConcurrencyLimit => "concurrency-limit",
            Reason::TimeOut => "time-out",
        }
    }
}

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum State {
    Waiting,
    Dispatched,
}

/// A request waiting in a queue: the dispatcher flips its state and wakes
/// it when it gets its seats.
#[derive(Debug)]
pub struct Ticket {
    pub seats: usize,
    /// The flow's hash, kept so a reconfigured level can deal it again.
    pub hash: u64,
    work: f64,
    arrival_r: f64,
    pub queue: Cell<usize>,
    state: Cell<State>,
    /// Set when its level went away or stopped queuing while it waited.
    pub rejected: Cell<bool>,
    waker: RefCell<Option<Waker>>,
}

impl Ticket {
    pub fn state(&self) -> State {
        self.state.get()
    }

    /// Registers the task to wake when the ticket is dispatched.
    pub fn park(&self, waker: &Waker) {
        *self.waker.borrow_mut() = Some(waker.clone());
    }

    /// The work it is charged when it starts.
    pub fn work(&self) -> f64 {
        self.work
    }

    /// Turns the waiting request away (its queue is gone).
    pub fn reject(&self) {
        self.rejected.set(true);
        self.wake();
    }

    fn wake(&self) {
        if let Some(w) = self.waker.borrow_mut().take() {
            w.wake();
        }
    }
}

/// What became of an arriving request.
#[derive(Debug)]
pub enum Arrival {
    /// Seats taken; executing in this queue (None for a level without
    /// queues), charged this much work.
    Execute(Option<usize>, f64),
    Wait(Rc<Ticket>),
    Reject(Reason),
}

/// The queuing parameters of a level that queues.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Queuing {
    pub queues: usize,
    pub hand_size: usize,
    pub queue_length_limit: usize,
}

#[derive(Debug, Default)]
struct Queue {
    waiting: VecDeque<Rc<Ticket>>,
    /// Seat-seconds of work waiting here (for choosing within a hand).
    work_waiting: f64,
    executing: usize,
    next_r: f64,
}

impl Queue {
    fn active(&self) -> bool {
        !self.waiting.is_empty() || self.executing > 0
    }
}

#[derive(Debug)]
pub struct QueueSet {
    /// Seats this level may use now (its share after borrowing).
    limit: usize,
    queuing: Option<Queuing>,
    queues: Vec<Queue>,
    seats_in_use: usize,
    waiting: usize,
    waiting_seats: usize,
    /// Queues with requests waiting or executing (the virtual clock's
    /// divisor), kept as they change rather than counted per request.
    active: usize,
    robin: usize,
    enqueues: usize,
    /// The virtual clock, and when it was last advanced.
    r: f64,
    r_at: Instant,
    /// Mean service time of the level's recent requests, in seconds.
    /// kube charges a constant 3 ms at dispatch and the rest at the end;
    /// but a flow of 10-seat LISTs taking half a second then looks owed
    /// while its requests run, and wins the next turn over a newcomer's
    /// GET. Charged what requests here really take, a queue's virtual
    /// time is right while its requests run, not only after.
    service: f64,
}

impl QueueSet {
    pub fn new(limit: usize, queuing: Option<Queuing>, now: Instant) -> Self {
        let mut set = Self {
            limit,
            queuing: None,
            queues: Vec::new(),
            seats_in_use: 0,
            waiting: 0,
            waiting_seats: 0,
            active: 0,
            robin: 0,
            enqueues: 0,
            r: 0.0,
            r_at: now,
            service: ASSUMED_SERVICE.as_secs_f64(),
        };
        set.reconfigure(limit, queuing, now);
        set
    }

    pub fn seats_in_use(&self) -> usize {
        self.seats_in_use
    }

    #[cfg(test)]
    pub fn waiting(&self) -> usize {
        self.waiting
    }

    pub fn waiting_seats(&self) -> usize {
        self.waiting_seats
    }

    pub fn limit(&self) -> usize {
        self.limit
    }

    /// The work a request of `seats` seats is charged when it starts.
    fn work(&self, seats: usize) -> f64 {
        seats as f64 * self.service
    }

    /// New limits or queue shape, then whoever fits starts. When the
    /// queue count changes, waiting requests are dealt again into the new
    /// queues, in their order, so none is lost — or turned away when the
    /// level no longer queues (or is gone: no queues and no seats).
    pub fn reconfigure(&mut self, limit: usize, queuing: Option<Queuing>, now: Instant) {
        self.advance(now);
        self.limit = limit;
        let count = queuing.map_or(0, |q| q.queues);
        self.queuing = queuing;
        if count != self.queues.len() {
            let old = std::mem::take(&mut self.queues);
            self.queues = (0..count).map(|_| Queue::default()).collect();
            self.waiting = 0;
            self.waiting_seats = 0;
            self.active = 0;
            self.robin = 0;
            // Requests executing in dropped queues finish without one.
            for t in old.into_iter().flat_map(|q| q.waiting) {
                match queuing {
                    Some(q) => {
                        let i = self.choose(t.hash, q);
                        self.push(i, t);
                    }
                    None => t.reject(),
                }
            }
        }
        self.dispatch();
    }

    /// Moves the virtual clock: it runs at the seats in use per active
    /// queue, so an idle level's clock stands still. kube also counts the
    /// seats waiting; but when a wide head waits for seats to free up,
    /// those seats serve nobody, and a clock counting them runs ahead of
    /// the service the queues really get — the flooding queues then look
    /// owed, and a newcomer's request waits behind their wide heads. This
    /// clock runs at the service given.
    fn advance(&mut self, now: Instant) {
        let elapsed = now.saturating_duration_since(self.r_at).as_secs_f64();
        self.r_at = now;
        if self.active > 0 {
            let busy = self.seats_in_use.min(self.limit.max(1));
            self.r += elapsed * busy as f64 / self.active as f64;
        }
    }

    /// The queue of the flow's hand with the least work waiting; the scan
    /// starts at a rotating offset so ties spread over the hand.
    fn choose(&mut self, hash: u64, q: Queuing) -> usize {
        if self.waiting == 0 {
            // Every queue is empty: the hand's first card is as good as
            // any, and it needs no dealing.
            return (hash % q.queues.max(1) as u64) as usize;
        }
        let hand = shuffle::deal(hash, q.queues, q.hand_size);
        let offset = self.enqueues % hand.len().max(1);
        self.enqueues = self.enqueues.wrapping_add(1);
        let mut best = hand[offset];
        for k in 1..hand.len() {
            let i = hand[(offset + k) % hand.len()];
            if self.queues[i].work_waiting < self.queues[best].work_waiting {
                best = i;
            }
        }
        best
    }

    fn push(&mut self, i: usize, t: Rc<Ticket>) {
        let queue = &mut self.queues[i];
        if !queue.active() {
            queue.next_r = self.r;
            self.active += 1;
        }
        t.queue.set(i);
        queue.work_waiting += t.work;
        queue.waiting.push_back(t.clone());
        self.waiting += 1;
        self.waiting_seats += t.seats;
    }

    fn fits(&self, seats: usize) -> bool {
        if seats > self.limit {
            self.seats_in_use == 0
        } else {
            self.seats_in_use + seats <= self.limit
        }
    }

    /// The seats kept for queues with nothing executing (see
    /// [`Self::fits_in`]).
    fn reserve(&self) -> usize {
        if self.queuing.is_none() || self.limit < 2 {
            return 0;
        }
        self.limit.div_ceil(RESERVE_SHARE).max(1)
    }

    /// Whether a request of `seats` seats from queue `i` may start now.
    /// A queue already executing may not take the level's last few seats
    /// (see [`RESERVE_SHARE`]): they are kept for a queue with nothing
    /// running, so a flow arriving while another fills the level starts
    /// at once instead of waiting for one of the other's requests to end
    /// — a LIST flood's requests hold their seats until their bodies have
    /// drained, for a second or more. kube's levels give every seat away;
    /// this gives up a tenth of a level's seats to a lone flow, for
    /// isolation between flows.
    fn fits_in(&self, i: usize, seats: usize) -> bool {
        if self.queues[i].executing == 0 {
            return self.fits(seats);
        }
        let limit = self.limit - self.reserve();
        seats <= limit && self.seats_in_use + seats <= limit
    }

    /// A request of `seats` seats from the flow hashed `hash` arrives.
    pub fn arrive(&mut self, now: Instant, hash: u64, seats: usize) -> Arrival {
        self.advance(now);
        let Some(q) = self.queuing else {
            if self.fits(seats) {
                self.seats_in_use += seats;
                return Arrival::Execute(None, 0.0);
            }
            return Arrival::Reject(Reason::ConcurrencyLimit);
        };
        let i = self.choose(hash, q);
        if self.seats_in_use >= self.limit && self.queues[i].waiting.len() >= q.queue_length_limit {
            return Arrival::Reject(Reason::QueueFull);
        }
        // Nobody waits and the seats are free: the request starts at
        // once, as queuing and dispatching it would (without scanning
        // the queues for the next turn).
        if self.waiting == 0 && self.fits_in(i, seats) {
            let queue = &mut self.queues[i];
            if !queue.active() {
                queue.next_r = self.r;
                self.active += 1;
            }
            let charged = seats as f64 * self.service;
            queue.next_r += charged;
            queue.executing += 1;
            self.seats_in_use += seats;
            return Arrival::Execute(Some(i), charged);
        }
        let ticket = Rc::new(Ticket {
            seats,
            hash,
            work: self.work(seats),
            arrival_r: self.r,
            queue: Cell::new(i),
            state: Cell::new(State::Waiting),
            rejected: Cell::new(false),
            waker: RefCell::new(None),
        });
        self.push(i, ticket.clone());
        self.dispatch();
        match ticket.state() {
            State::Dispatched => Arrival::Execute(Some(i), ticket.work),
            State::Waiting => Arrival::Wait(ticket),
        }
    }

    /// Starts as many waiting requests as the seats allow, least virtual
    /// finish first. A head that does not fit stops the level (its turn
    /// is not given away to narrower requests behind it) — unless only
    /// the reserve stops it: then the reserve goes to the first head of
    /// a queue with nothing executing.
    fn dispatch(&mut self) {
        while self.waiting > 0 && self.seats_in_use < self.limit.max(1) {
            let Some(i) = self.next_head(false) else {
                return;
            };
            let seats = self.queues[i].waiting.front().map_or(0, |t| t.seats);
            let i = if self.fits_in(i, seats) {
                i
            } else if self.fits(seats) {
                match self.next_head(true) {
                    Some(idle) if self.fits(self.queues[idle].waiting[0].seats) => idle,
                    _ => return,
                }
            } else {
                return;
            };
            let queue = &mut self.queues[i];
            let Some(t) = queue.waiting.pop_front() else {
                return;
            };
            queue.work_waiting -= t.work;
            queue.next_r += t.work;
            queue.executing += 1;
            self.robin = i;
            self.waiting -= 1;
            self.waiting_seats -= t.seats;
            self.seats_in_use += t.seats;
            t.state.set(State::Dispatched);
            t.wake();
        }
    }

    /// The queue whose head has the least virtual finish (of the queues
    /// with nothing executing, when `idle`).
    fn next_head(&self, idle: bool) -> Option<usize> {
        let n = self.queues.len();
        let mut best: Option<(usize, f64)> = None;
        for k in 1..=n {
            let i = (self.robin + k) % n;
            let queue = &self.queues[i];
            if idle && queue.executing > 0 {
                continue;
            }
            if let Some(head) = queue.waiting.front() {
                let finish = queue.next_r + head.work;
                if best.is_none_or(|(_, f)| finish < f) {
                    best = Some((i, finish));
                }
            }
        }
        best.map(|(i, _)| i)
    }

    /// A request executing in `queue` with `seats` seats is done after
    /// `took`: its queue is charged its real service time and whoever
    /// fits next starts.
    pub fn finish(
        &mut self,
        now: Instant,
        (queue, charged): (Option<usize>, f64),
        seats: usize,
        took: Duration,
    ) {
        self.advance(now);
        self.seats_in_use = self.seats_in_use.saturating_sub(seats);
        let took = took.as_secs_f64();
        self.service += SERVICE_WEIGHT * (took - self.service);
        if let Some(q) = queue.and_then(|i| self.queues.get_mut(i)) {
            // A queue count changed since the request started leaves it
            // pointing at a queue it never ran in: that queue's counts
            // are only lowered if it really was busy.
            let was_active = q.active();
            q.executing = q.executing.saturating_sub(1);
            if was_active && !q.active() {
                self.active -= 1;
            }
            q.next_r += seats as f64 * took - charged;
            // A queue is never owed more than its oldest waiter's start.
            if let Some(head) = q.waiting.front() {
                q.next_r = q.next_r.max(head.arrival_r);
            }
        }
        self.dispatch();
    }

    /// A waiting request gives up (its wait limit passed, or its client
    /// left). False when it was dispatched meanwhile.
    pub fn cancel(&mut self, t: &Rc<Ticket>) -> bool {
        if t.state() != State::Waiting {
            return false;
        }
        if let Some(q) = self.queues.get_mut(t.queue.get()) {
            if let Some(pos) = q.waiting.iter().position(|w| Rc::ptr_eq(w, t)) {
                q.waiting.remove(pos);
                q.work_waiting -= t.work;
                if !q.active() {
                    self.active -= 1;
                }
                self.waiting -= 1;
                self.waiting_seats -= t.seats;
            }
        }
        // Removing a head may let a narrower request start.
        self.dispatch();
        true
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn queuing(queues: usize, hand: usize, limit: usize) -> Option<Queuing> {
        Some(Queuing {
            queues,
            hand_size: hand,
            queue_length_limit: limit,
        })
    }

    #[test]
    fn reject_level_refuses_beyond_its_seats() {
        let now = Instant::now();
        let mut set = QueueSet::new(2, None, now);
        assert!(matches!(set.arrive(now, 1, 1), Arrival::Execute(None, _)));
        assert!(matches!(set.arrive(now, 1, 1), Arrival::Execute(None, _)));
        assert!(matches!(
            set.arrive(now, 1, 1),
            Arrival::Reject(Reason::ConcurrencyLimit)
        ));
        set.finish(now, (None, 0.0), 1, Duration::from_millis(1));
        assert!(matches!(set.arrive(now, 1, 1), Arrival::Execute(None, _)));
    }

    /// A flow that fills the level leaves the last tenth of its seats to
    /// another flow, which then starts at once rather than after one of
    /// the first flow's requests ends.
    #[test]
    fn a_flooding_flow_leaves_the_reserve_to_a_newcomer() {
        let now = Instant::now();
        let mut set = QueueSet::new(20, queuing(64, 1, 100), now);
        let (flood, calm) = (1u64, 2u64);
        let mut started = 0;
        let mut waiting = Vec::new();
        for _ in 0..10 {
            match set.arrive(now, flood, 5) {
                Arrival::Execute(..) => started += 1,
                Arrival::Wait(t) => waiting.push(t),
                Arrival::Reject(r) => panic!("{r:?}"),
            }
        }
        // Three 5-seat requests fit under the 18 seats a running queue may
        // hold; the flood's fourth waits though 5 seats are free.
        assert_eq!((started, set.seats_in_use()), (3, 15));
        assert!(matches!(set.arrive(now, calm, 1), Arrival::Execute(..)));
        // When a flood request ends, its next one takes the seats it gave
        // back, still within the flood's share: 16 of 18, not 21.
        set.finish(now, (Some(0), 0.015), 5, Duration::from_millis(3));
        assert_eq!(waiting[0].state(), State::Dispatched);
        assert_eq!(waiting[1].state(), State::Waiting);
        assert_eq!(set.seats_in_use(), 16);
        // Alone on the level, one flow still gets at least nine tenths.
        let mut lone = QueueSet::new(20, queuing(64, 1, 100), now);
        let got = (0..20)
            .filter(|_| matches!(lone.arrive(now, flood, 1), Arrival::Execute(..)))
            .count();
        assert_eq!(got, 18);
    }

    #[test]
    fn a_request_wider_than_the_level_runs_alone() {
        let now = Instant::now();
        let mut set = QueueSet::new(4, queuing(1, 1, 10), now);
        assert!(matches!(
            set.arrive(now, 1, 10),
            Arrival::Execute(Some(0), _)
        ));
        let Arrival::Wait(t) = set.arrive(now, 1, 1) else {
            panic!("the level is taken by the wide request")
        };
        set.finish(now, (Some(0), 0.03), 10, Duration::from_millis(3));
        assert_eq!(t.state(), State::Dispatched);
        assert_eq!(set.seats_in_use(), 1);
    }

    #[test]
    fn full_queue_rejects_only_when_no_seat_is_free() {
        let now = Instant::now();
        let mut set = QueueSet::new(1, queuing(1, 1, 2), now);
        assert!(matches!(set.arrive(now, 7, 1), Arrival::Execute(..)));
        assert!(matches!(set.arrive(now, 7, 1), Arrival::Wait(_)));
        assert!(matches!(set.arrive(now, 7, 1), Arrival::Wait(_)));
        assert!(matches!(
            set.arrive(now, 7, 1),
            Arrival::Reject(Reason::QueueFull)
        ));
        assert_eq!(set.waiting(), 2);
    }

    #[test]
    fn cancelled_waiter_leaves_its_queue() {
        let now = Instant::now();
        let mut set = QueueSet::new(1, queuing(4, 2, 5), now);
        let _running = set.arrive(now, 1, 1);
        let Arrival::Wait(t) = set.arrive(now, 2, 1) else {
            panic!("no seat is free")
        };
        assert!(set.cancel(&t));
        assert_eq!((set.waiting(), set.waiting_seats()), (0, 0));
        set.finish(now, (Some(0), 0.003), 1, Duration::ZERO);
        assert_eq!(set.seats_in_use(), 0, "the cancelled ticket never runs");
    }

    /// The queue count changes while a request executes: it finishes
    /// pointing at a queue it never ran in, and the set keeps counting.
    #[test]
    fn a_request_outlives_its_queue() {
        let now = Instant::now();
        let mut set = QueueSet::new(4, queuing(8, 2, 10), now);
        let Arrival::Execute(q, w) = set.arrive(now, 3, 1) else {
            panic!("idle level")
        };
        set.reconfigure(4, queuing(16, 2, 10), now);
        set.finish(now, (q, w), 1, Duration::from_millis(1));
        assert_eq!(set.active, 0);
        assert!(matches!(set.arrive(now, 3, 1), Arrival::Execute(..)));
        assert_eq!(set.active, 1);
    }

    /// A level stops queuing: its waiting requests are turned away.
    #[test]
    fn waiters_of_a_level_that_stops_queuing_are_refused() {
        let now = Instant::now();
        let mut set = QueueSet::new(1, queuing(4, 2, 10), now);
        let _running = set.arrive(now, 1, 1);
        let Arrival::Wait(t) = set.arrive(now, 2, 1) else {
            panic!("no seat is free")
        };
        set.reconfigure(1, None, now);
        assert!(t.rejected.get());
        assert_eq!(set.waiting_seats(), 0);
    }

    /// A flow of slow 10-seat requests holds most of the level; a GET
    /// from another flow arriving while they run goes next, not after
    /// the flow's waiting heads.
    #[test]
    fn a_newcomer_is_not_behind_a_slow_wide_flow() {
        let mut now = Instant::now();
        // 23 seats: two of the flood's 10 fit under the 20 a running queue
        // may hold, and the newcomer's 4 do not fit in what is left.
        let mut set = QueueSet::new(23, queuing(64, 1, 100), now);
        let (flood, calm, earlier) = (5u64, 6u64, 7u64);
        // The level has learnt (from another flow) that its requests
        // take half a second.
        for _ in 0..100 {
            let Arrival::Execute(q, w) = set.arrive(now, earlier, 1) else {
                panic!("idle level")
            };
            set.finish(now, (q, w), 1, Duration::from_millis(500));
        }
        let mut running = Vec::new();
        for _ in 0..2 {
            match set.arrive(now, flood, 10) {
                Arrival::Execute(q, w) => running.push((q, w)),
                other => panic!("{other:?}"),
            }
        }
        let waiting: Vec<_> = (0..5)
            .map(|_| match set.arrive(now, flood, 10) {
                Arrival::Wait(t) => t,
                other => panic!("{other:?}"),
            })
            .collect();
        now += Duration::from_millis(50);
        let Arrival::Wait(get) = set.arrive(now, calm, 4) else {
            panic!("the level is full")
        };
        // One of the flood's requests ends early; the other still runs,
        // and a queue charged only for what has ended would look owed.
        now += Duration::from_millis(50);
        set.finish(now, running.remove(0), 10, Duration::from_millis(50));
        assert_eq!(get.state(), State::Dispatched, "the GET goes first");
        assert!(waiting.iter().all(|t| t.state() == State::Waiting));
    }

    /// Two flows with one queue each and one seat: a flow with many
    /// requests waiting does not get more turns than a flow with few.
    #[test]
    fn queues_take_turns() {
        let mut now = Instant::now();
        let mut set = QueueSet::new(1, queuing(64, 1, 100), now);
        let (heavy, light) = (0u64, u64::MAX / 3);
        let first = match set.arrive(now, heavy, 1) {
            Arrival::Execute(q, w) => (q, w),
            other => panic!("{other:?}"),
        };
        let heavy_tickets: Vec<_> = (0..20)
            .map(|_| match set.arrive(now, heavy, 1) {
                Arrival::Wait(t) => t,
                other => panic!("{other:?}"),
            })
            .collect();
        let light_tickets: Vec<_> = (0..3)
            .map(|_| match set.arrive(now, light, 1) {
                Arrival::Wait(t) => t,
                other => panic!("{other:?}"),
            })
            .collect();
        assert_ne!(heavy_tickets[0].queue.get(), light_tickets[0].queue.get());
        let mut running = (first, 1usize);
        let mut order = Vec::new();
        for _ in 0..6 {
            now += Duration::from_millis(3);
            set.finish(now, running.0, running.1, Duration::from_millis(3));
            let next = heavy_tickets
                .iter()
                .map(|t| ("heavy", t))
                .chain(light_tickets.iter().map(|t| ("light", t)))
                .find(|(_, t)| {
                    t.state() == State::Dispatched && !order.iter().any(|(_, p)| Rc::ptr_eq(p, t))
                })
                .expect("a request started");
            running = ((Some(next.1.queue.get()), next.1.work()), 1);
            order.push((next.0, next.1.clone()));
        }
        let names: Vec<&str> = order.iter().map(|(n, _)| *n).collect();
        assert_eq!(
            names,
            ["light", "heavy", "light", "heavy", "light", "heavy"]
        );
    }
}
