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
    /// Work that lives on the etcd thread (the mirror's watch).
    Run(std::pin::Pin<Box<dyn std::future::Future<Output = ()> + Send>>),
}

/// A handle to the etcd thread, cheap to clone and to send anywhere.
#[derive(Clone)]
pub struct Bridge {
    calls: async_channel::Sender<Call>,
    /// Asks the mirror's watch for a progress notification.
    progress: async_channel::Sender<()>,
    pub(super) client: Client,
    pub(super) prefix: String,
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
                    let client = match connect(&cfg).await {
                        Ok(c) => c,
                        Err(e) => {
                            let _ = ready_tx.send(Err(e));
                            return;
                        }
                    };
                    let _ = ready_tx.send(Ok(client.clone()));
                    serve(client, inbox).await;
                });
            })
            .map_err(|e| e.to_string())?;
        let client = ready_rx
            .recv()
            .map_err(|_| "the etcd thread ended".to_string())??;
        Ok((
            Self {
                calls,
                progress,
                client,
                prefix,
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

    /// Runs `work` on the etcd thread.
    pub fn spawn(&self, work: impl std::future::Future<Output = ()> + Send + 'static) {
        let _ = self.calls.try_send(Call::Run(Box::pin(work)));
    }

    /// Asks for a progress notification on the mirror's watch (several
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

async fn connect(cfg: &EtcdConfig) -> Result<Client, String> {
    let mut opts = ConnectOptions::new()
        .with_connect_timeout(Duration::from_secs(5))
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
    Client::connect(&cfg.endpoints, Some(opts))
        .await
        .map_err(|e| format!("connecting to etcd at {:?}: {e}", cfg.endpoints))
}

/// Runs each call as its own task: calls are answered as etcd answers
/// them, not in arrival order.
async fn serve(client: Client, inbox: async_channel::Receiver<Call>) {
    let revision_key = b"/".to_vec();
    while let Ok(call) = inbox.recv().await {
        let mut kv = client.kv_client().max_decoding_message_size(usize::MAX);
        let revision_key = revision_key.clone();
        tokio::spawn(async move {
            match call {
                Call::Run(work) => work.await,
                Call::Txn(txn, reply) => {
                    let _ = reply.send(kv.txn(txn).await.map_err(|e| e.to_string()));
                }
                Call::Range(key, opts, reply) => {
                    let _ = reply.send(kv.get(key, Some(opts)).await.map_err(|e| e.to_string()));
                }
                Call::Revision(reply) => {
                    let answer = kv
                        .get(revision_key, Some(GetOptions::new().with_count_only()))
                        .await
                        .map_err(|e| e.to_string())
                        .and_then(|r| {
                            r.header()
                                .map(|h| h.revision().max(0) as u64)
                                .ok_or_else(|| "etcd answered without a header".to_string())
                        });
                    let _ = reply.send(answer);
                }
            }
        });
    }
}
