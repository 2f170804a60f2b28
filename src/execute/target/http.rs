//! `http(s)://…`: a POST of the payload with `Idempotency-Key`; the answer says whose failure
//! a failed delivery is (2xx done, 409 already done, other 4xx the message's, the rest transient).

use anyhow::{Context, Result};
use futures_util::future::BoxFuture;

use super::{transport_error, with_retries, Delivery, Probe, Retry, Target};
use crate::execute::message::Message;

pub struct HttpTarget {
    client: reqwest::Client,
    url: String,
    retry: Retry,
    /// What the health probe GETs: `--health-url`, else the target's own URL.
    health: String,
}

impl HttpTarget {
    pub fn new(url: &str, retry: Retry) -> Result<HttpTarget> {
        let client = reqwest::Client::builder().timeout(retry.timeout).build().context("building the HTTP client")?;
        Ok(HttpTarget { client, url: url.to_string(), retry, health: url.to_string() })
    }

    /// The URL the health probe asks instead of the target's own.
    pub fn with_health(mut self, url: &str) -> HttpTarget {
        self.health = url.to_string();
        self
    }

    /// POSTs `body` with the key (and any extra headers), retried while the answer says so
    /// (see `Delivery`).
    pub async fn post(&self, key: &str, body: Vec<u8>, content_type: &str, extra: &[(String, String)]) -> Delivery {
        with_retries(&self.retry, || async {
            let mut request = self.client.post(&self.url).header("Content-Type", content_type).header("Idempotency-Key", key);
            for (name, value) in extra {
                request = request.header(name.as_str(), value.as_str());
            }
            let sent = request.body(body.clone()).send().await;
            match sent {
                Ok(response) => answer(&self.url, response.status()),
                Err(e) => transport_error(&self.url, &e),
            }
        })
        .await
    }
}

fn answer(url: &str, status: reqwest::StatusCode) -> Delivery {
    match status.as_u16() {
        200..=299 => Delivery::Delivered,
        409 => Delivery::AlreadyDone,
        400..=499 => Delivery::Rejected(format!("HTTP {status} from {url}")),
        _ => Delivery::ServerError(format!("HTTP {status} from {url}")),
    }
}

impl Target for HttpTarget {
    /// The payload as the body (empty for a null value), typed JSON, text or bytes as it is;
    /// the origin key and headers as `X-Dlqf-Origin-Key` and `X-Dlqf-Origin-Header-NAME` (those
    /// a header can carry).
    fn send<'a>(&'a self, message: &'a Message<'a>) -> BoxFuture<'a, Delivery> {
        let mut extra: Vec<(String, String)> = message.origin_key_text().map(|k| ("X-Dlqf-Origin-Key".to_string(), k)).into_iter().collect();
        for (name, value) in &message.headers {
            if let Some(value) = value {
                extra.push((format!("X-Dlqf-Origin-Header-{name}"), String::from_utf8_lossy(value).into_owned()));
            }
        }
        extra.retain(|(name, value)| reqwest::header::HeaderName::try_from(name.as_str()).is_ok() && reqwest::header::HeaderValue::try_from(value.as_str()).is_ok());
        Box::pin(async move { self.post(message.key, message.body(), message.content_type(), &extra).await })
    }

    /// A GET of the health URL (the target's own unless `--health-url` names one): any answer
    /// but 500, 502, 503 and 504 (a 404, 405 or 501 of a POST-only endpoint included) says a
    /// server is there and serving; those four, or no answer, say it is not.
    fn probe(&self) -> BoxFuture<'_, Option<Probe>> {
        Box::pin(async move {
            Some(match self.client.get(&self.health).header("User-Agent", "dlqf-probe").send().await {
                Ok(response) => match response.status().as_u16() {
                    code @ (500 | 502 | 503 | 504) => Probe::Down(format!("GET {}: HTTP {code}", self.health)),
                    code => Probe::Up(format!("GET {}: HTTP {code}", self.health)),
                },
                Err(e) => Probe::Down(format!("GET {}: {e}", self.health)),
            })
        })
    }
}


#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn answers_say_whose_failure_it_is() {
        let status = |n| reqwest::StatusCode::from_u16(n).unwrap();
        assert_eq!(answer("u", status(204)), Delivery::Delivered);
        assert_eq!(answer("u", status(409)), Delivery::AlreadyDone);
        assert_eq!(answer("u", status(422)), Delivery::Rejected("HTTP 422 Unprocessable Entity from u".into()));
        assert_eq!(answer("u", status(503)), Delivery::ServerError("HTTP 503 Service Unavailable from u".into()));
        assert!(answer("u", status(503)).is_retryable() && !answer("u", status(404)).is_retryable());
        assert!(Delivery::Down("x".into()).is_retryable());
    }
}
