//! The executor's `Api` as admission's [`Host`]: what plugins may ask of
//! the server above them — storage, the catalog, webhook calls, and
//! conversion of custom resources between versions.

use crate::admission::Host;
use crate::context::Api;
use crate::webhook::{self, ClientConfig};
use bytes::Bytes;
use kubeshard_core::catalog::{CatalogSnapshot, ResourceInfo};
use kubeshard_core::status::ApiError;
use serde_json::Value;
use std::future::Future;
use std::pin::Pin;
use std::sync::Arc;
use std::time::Duration;

impl Host for Api {
    fn storage(&self) -> &crate::storage::Backend {
        Api::storage(self)
    }

    fn catalog(&self) -> Arc<CatalogSnapshot> {
        Arc::clone(&self.catalog.current())
    }

    fn call_webhook<'a>(
        &'a self,
        client_config: &'a Value,
        query: &'a str,
        body: Vec<u8>,
        timeout: Duration,
    ) -> Pin<Box<dyn Future<Output = Result<Bytes, String>> + 'a>> {
        Box::pin(async move {
            let client = ClientConfig::parse(client_config)
                .map_err(|e| format!("could not get REST client: {e}"))?
                .with_query(query);
            webhook::post_json(self, &client, body, timeout)
                .await
                .map_err(|e| format!("failed to call webhook: {e}"))
        })
    }

    fn convert<'a>(
        &'a self,
        info: &'a ResourceInfo,
        objs: &'a mut [Value],
    ) -> Pin<Box<dyn Future<Output = Result<(), ApiError>> + 'a>> {
        Box::pin(crate::apiextensions::conversion::convert_values(
            self, info, objs,
        ))
    }
}
