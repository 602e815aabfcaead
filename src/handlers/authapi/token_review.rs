//! TokenReview: would this bearer token authenticate, and as whom?

use super::{answer, Api};
use crate::security::authn;
use kubeshard_core::status::{field_required, ApiError};
use serde_json::{json, Value};

pub async fn review(api: &Api, obj: Value) -> Result<Value, ApiError> {
    let token = obj
        .pointer("/spec/token")
        .and_then(Value::as_str)
        .unwrap_or("")
        .to_string();
    if token.is_empty() {
        return Err(ApiError::invalid(
            "authentication.k8s.io",
            "TokenReview",
            "",
            vec![field_required("spec.token", "")],
        ));
    }
    let audiences: Option<Vec<String>> = obj
        .pointer("/spec/audiences")
        .and_then(Value::as_array)
        .filter(|a| !a.is_empty())
        .map(|a| {
            a.iter()
                .filter_map(|x| x.as_str().map(str::to_string))
                .collect()
        });
    let status = match authn::authenticate_token(
        &api.security,
        api.storage(),
        &token,
        audiences.as_deref(),
    )
    .await
    {
        Ok(Some(t)) => {
            json!({"authenticated": true, "user": t.user.to_json(), "audiences": t.audiences})
        }
        Ok(None) => {
            json!({"authenticated": false, "error": "the token was not recognized by any authenticator"})
        }
        Err(e) => json!({"authenticated": false, "error": e}),
    };
    Ok(answer(obj, status))
}
