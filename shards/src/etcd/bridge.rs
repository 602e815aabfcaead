//! The thread etcd-client runs on. etcd-client is built on tokio, the
//! executors on glommio: one thread runs a small tokio runtime with the
//! client, and executors hand it calls over a channel and await the
//! answers on oneshots, so no executor ever blocks on etcd.

use super::EtcdConfig;
use etcd_client::{
    Certificate, Client, ConnectOptions, GetOptions, GetResponse, Identity, TlsOptions, Txn,
    TxnResponse,
};
use futures_channel::oneshot;
use std::sync::atomic::{AtomicBool, AtomicUsize, Ordering};
use std::sync::Arc;
use std::time::Duration;

/// How long one call may take before it fails as unavailable: a write's
/// client is answered 503 well before its own timeout.
pub const CALL_TIMEOUT: Duration = Duration::from_secs(10);

/// What an executor asks of etcd.
pub(super) enum Call {
    Txn(Txn, oneshot::Sender<Result<TxnResponse, String>>),
    Range(
        Vec<u8>,
        GetOptions,
        oneshot::Sender<Result<GetResponse, String>>,
    ),
    /// The store's current revision (a linearizable read).
    Revision(oneshot::Sender<Result<u64, String>>),
    /// A lease keeping a key for at least this long (see [`super::leases`]).
    Lease(Duration, oneshot::Sender<Result<i64, String>>),
    /// Work that lives on the etcd thread (the mirror's watch).
    Run(std::pin::Pin<Box<dyn std::future::Future<Output = ()> + Send>>),
}

/// A handle to the etcd thread, cheap to clone and to send anywhere.
#[derive(Clone)]
pub struct Bridge {
    calls: async_channel::Sender<Call>,
    /// Asks the mirror to mark its watch's progress.
    progress: async_channel::Sender<()>,
    pub(super) pool: Arc<Pool>,
    pub(super) prefix: String,
    /// What the last health probe found (see [`probe`]).
    healthy: Arc<AtomicBool>,
}

impl Bridge {
    /// Connects (on a new thread) to every endpoint of `cfg`; the client
    /// balances over them, so a lost member only loses its own calls.
    pub fn connect(cfg: &EtcdConfig) -> Result<(Self, async_channel::Receiver<()>), String> {
        let (calls, inbox) = async_channel::unbounded::<Call>();
        let (progress, asked) = async_channel::bounded::<()>(1);
        let (ready_tx, ready_rx) = std::sync::mpsc::channel();
        let cfg = cfg.clone();
        let prefix = cfg.prefix.clone();
        let healthy = Arc::new(AtomicBool::new(true));
        let healthy_probe = healthy.clone();
        std::thread::Builder::new()
            .name("etcd".into())
            .spawn(move || {
                let rt = match tokio::runtime::Builder::new_current_thread()
                    .enable_all()
                    .build()
                {
                    Ok(rt) => rt,
                    Err(e) => {
                        let _ = ready_tx.send(Err(e.to_string()));
                        return;
                    }
                };
                rt.block_on(async move {
                    let pool = match connect(&cfg).await {
                        Ok(p) => Arc::new(p),
                        Err(e) => {
                            let _ = ready_tx.send(Err(e));
                            return;
                        }
                    };
                    let _ = ready_tx.send(Ok(pool.clone()));
                    tokio::spawn(probe(pool.clone(), healthy_probe));
                    serve(pool, inbox).await;
                });
            })
            .map_err(|e| e.to_string())?;
        let pool = ready_rx
            .recv()
            .map_err(|_| "the etcd thread ended".to_string())??;
        Ok((
            Self {
                calls,
                progress,
                pool,
                prefix,
                healthy,
            },
            asked,
        ))
    }

    pub async fn txn(&self, txn: Txn) -> Result<TxnResponse, String> {
        self.call(|tx| Call::Txn(txn, tx)).await
    }

    pub async fn range(&self, key: Vec<u8>, opts: GetOptions) -> Result<GetResponse, String> {
        self.call(|tx| Call::Range(key, opts, tx)).await
    }

    pub async fn revision(&self) -> Result<u64, String> {
        self.call(Call::Revision).await
    }

    pub async fn lease(&self, ttl: Duration) -> Result<i64, String> {
        self.call(|tx| Call::Lease(ttl, tx)).await
    }

    /// Whether etcd answered the last health probe (kube's `etcd` check).
    pub fn healthy(&self) -> bool {
        self.healthy.load(Ordering::Relaxed)
    }

    /// Runs `work` on the etcd thread.
    pub fn spawn(&self, work: impl std::future::Future<Output = ()> + Send + 'static) {
        let _ = self.calls.try_send(Call::Run(Box::pin(work)));
    }

    /// Asks the mirror to mark how far its watch has come (several
    /// asks before it is sent make one).
    pub fn request_progress(&self) {
        let _ = self.progress.try_send(());
    }

    async fn call<T>(
        &self,
        make: impl FnOnce(oneshot::Sender<Result<T, String>>) -> Call,
    ) -> Result<T, String> {
        let (tx, rx) = oneshot::channel();
        self.calls
            .send(make(tx))
            .await
            .map_err(|_| "the etcd client has stopped".to_string())?;
        rx.await
            .map_err(|_| "the etcd client has stopped".to_string())?
    }
}

/// One client per etcd member, and the one calls go to now: a call that
/// cannot reach its member moves every later call to the next one.
/// (etcd-client's own balancing kept sending calls to a dead member.)
pub struct Pool {
    clients: Vec<Client>,
    current: AtomicUsize,
}

impl Pool {
    /// The client calls go to now, and its place.
    pub fn pick(&self) -> (usize, Client) {
        let i = self.current();
        (i, self.clients[i].clone())
    }

    /// The place of the member calls go to now.
    pub fn current(&self) -> usize {
        self.current.load(Ordering::Relaxed) % self.clients.len()
    }

    /// How many members the pool holds.
    pub fn members(&self) -> usize {
        self.clients.len()
    }

    /// The client at `i` could not reach its member: the next one takes
    /// over (unless another call moved on already).
    pub fn failed(&self, i: usize) {
        let next = (i + 1) % self.clients.len();
        let _ = self
            .current
            .compare_exchange(i, next, Ordering::Relaxed, Ordering::Relaxed);
    }

    fn attempts(&self) -> usize {
        2 * self.clients.len()
    }
}

/// Whether a failed call may go again to another member: always when it
/// never left (no connection); when `idempotent`, also when the member
/// went away under it.
fn retryable(e: &etcd_client::Error, idempotent: bool) -> bool {
    let text = e.to_string().to_ascii_lowercase();
    let unsent = text.contains("connect error") || text.contains("connection refused");
    let lost = [
        "unavailable",
        "transport",
        "broken pipe",
        "reset",
        "no leader",
    ]
    .iter()
    .any(|w| text.contains(w));
    unsent || (idempotent && lost)
}

/// Runs `call` on the current member, moving on to the next ones while
/// it fails in a way that allows it (see [`retryable`]).
pub async fn with_failover<T, F, Fut>(pool: &Pool, idempotent: bool, call: F) -> Result<T, String>
where
    F: Fn(Client) -> Fut,
    Fut: std::future::Future<Output = Result<T, etcd_client::Error>>,
{
    let mut last = String::new();
    for attempt in 0..pool.attempts() {
        let (i, client) = pool.pick();
        match call(client).await {
            Ok(v) => return Ok(v),
            Err(e) if retryable(&e, idempotent) => {
                last = e.to_string();
                pool.failed(i);
                let pause = Duration::from_millis(25 << attempt.min(4));
                tokio::time::sleep(pause).await;
            }
            Err(e) => return Err(e.to_string()),
        }
    }
    Err(last)
}

async fn connect(cfg: &EtcdConfig) -> Result<Pool, String> {
    let mut opts = ConnectOptions::new()
        .with_connect_timeout(Duration::from_secs(2))
        .with_timeout(CALL_TIMEOUT)
        .with_keep_alive(Duration::from_secs(10), Duration::from_secs(5));
    if let Some(tls) = &cfg.tls {
        let read = |p: &std::path::Path| {
            std::fs::read(p).map_err(|e| format!("reading {}: {e}", p.display()))
        };
        let mut t = TlsOptions::new();
        if let Some(ca) = &tls.ca_file {
            t = t.ca_certificate(Certificate::from_pem(read(ca)?));
        }
        if let (Some(cert), Some(key)) = (&tls.cert_file, &tls.key_file) {
            t = t.identity(Identity::from_pem(read(cert)?, read(key)?));
        }
        opts = opts.with_tls(t);
    }
    let mut clients = Vec::new();
    let mut errors = Vec::new();
    for endpoint in &cfg.endpoints {
        match Client::connect([endpoint], Some(opts.clone())).await {
            Ok(c) => clients.push(c),
            Err(e) => errors.push(format!("{endpoint}: {e}")),
        }
    }
    if clients.is_empty() {
        return Err(format!("connecting to etcd: {}", errors.join("; ")));
    }
    for e in errors {
        tracing::warn!(error = %e, "an etcd member could not be reached; using the others");
    }
    Ok(Pool {
        clients,
        current: AtomicUsize::new(0),
    })
}

/// How often etcd is probed, and how long a probe may take (kube's
/// `--etcd-healthcheck-timeout`).
const PROBE_EVERY: Duration = Duration::from_secs(1);
const PROBE_TIMEOUT: Duration = Duration::from_secs(2);

/// Keeps `healthy` saying whether a quorum read succeeds: health checks
/// read the flag instead of making a call to etcd each.
async fn probe(pool: Arc<Pool>, healthy: Arc<AtomicBool>) {
    loop {
        let ok = matches!(
            tokio::time::timeout(PROBE_TIMEOUT, current_revision(&pool)).await,
            Ok(Ok(_))
        );
        if healthy.swap(ok, Ordering::Relaxed) != ok {
            if ok {
                tracing::info!("etcd answers again");
            } else {
                tracing::warn!("etcd does not answer");
            }
        }
        tokio::time::sleep(PROBE_EVERY).await;
    }
}

/// etcd's current revision: the header of a quorum read that counts one
/// key (consistent reads wait for it; the health probe makes it).
async fn current_revision(pool: &Pool) -> Result<u64, String> {
    let read = with_failover(pool, true, |c| async move {
        c.kv_client()
            .get(b"/".to_vec(), Some(GetOptions::new().with_count_only()))
            .await
    })
    .await?;
    read.header()
        .map(|h| h.revision().max(0) as u64)
        .ok_or_else(|| "etcd answered without a header".to_string())
}

/// Runs each call as its own task: calls are answered as etcd answers
/// them, not in arrival order.
async fn serve(pool: Arc<Pool>, inbox: async_channel::Receiver<Call>) {
    let leases = Arc::new(tokio::sync::Mutex::new(super::leases::Leases::default()));
    while let Ok(call) = inbox.recv().await {
        let pool = pool.clone();
        let leases = leases.clone();
        tokio::spawn(async move {
            let kv = |c: Client| c.kv_client().max_decoding_message_size(usize::MAX);
            match call {
                Call::Run(work) => work.await,
                Call::Txn(txn, reply) => {
                    let answer = with_failover(&pool, false, |c| {
                        let txn = txn.clone();
                        async move { kv(c).txn(txn).await }
                    })
                    .await;
                    let _ = reply.send(answer);
                }
                Call::Range(key, opts, reply) => {
                    let answer = with_failover(&pool, true, |c| {
                        let (key, opts) = (key.clone(), opts.clone());
                        async move { kv(c).get(key, Some(opts)).await }
                    })
                    .await;
                    let _ = reply.send(answer);
                }
                Call::Revision(reply) => {
                    let _ = reply.send(current_revision(&pool).await);
                }
                Call::Lease(ttl, reply) => {
                    let _ = reply.send(leases.lock().await.get(&pool, ttl).await);
                }
            }
        });
    }
}
