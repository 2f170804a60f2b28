//! `http(s)://…`: a POST of the payload with `Idempotency-Key`; the answer says whose failure
//! a failed delivery is (2xx done, 409 already done, 408 and 429 the target's busy, other 4xx
//! the message's, 500 the application's, the other 5xx the target's unavailability).

use anyhow::{Context, Result};
use futures_util::future::BoxFuture;

use super::{transport_error, with_retries, Delivery, Probe, Retry, Target};
use crate::execute::message::Message;

pub struct HttpTarget {
    client: reqwest::Client,
    url: String,
    retry: Retry,
    /// `--health-url`: what the probe GETs instead of the target's own URL, and whose 2xx
    /// proves the target up.
    health: Option<String>,
}

impl HttpTarget {
    pub fn new(url: &str, retry: Retry) -> Result<HttpTarget> {
        let client = reqwest::Client::builder().timeout(retry.timeout).build().context("building the HTTP client")?;
        Ok(HttpTarget { client, url: url.to_string(), retry, health: None })
    }

    /// The URL the health probe asks instead of the target's own.
    pub fn with_health(mut self, url: &str) -> HttpTarget {
        self.health = Some(url.to_string());
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
    let why = format!("HTTP {status} from {url}");
    match status.as_u16() {
        200..=299 => Delivery::Delivered,
        409 => Delivery::AlreadyDone,
        // Request Timeout and Too Many Requests say the server is busy, not what of the message.
        408 | 429 => Delivery::Unavailable(why),
        400..=499 => Delivery::Rejected(why),
        // The application itself failed on this request, where a gateway answers 502, 503, 504.
        500 => Delivery::AppFailed(why),
        _ => Delivery::Unavailable(why),
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

    /// With `--health-url`: a GET of it, up (`Healthy`) only when it answers 2xx. Without: a
    /// GET of the target's own URL, where any answer but 500, 502, 503 and 504 (a 404, 405 or
    /// 501 of a POST-only endpoint included) says only that a server speaks HTTP there
    /// (`Serving`); those four, or no answer, say it is down.
    fn probe(&self) -> BoxFuture<'_, Option<Probe>> {
        Box::pin(async move {
            let url = self.health.as_deref().unwrap_or(&self.url);
            let asked = format!("GET {url}");
            let answer = match self.client.get(url).header("User-Agent", "dlqf-probe").send().await {
                Ok(response) => response.status().as_u16(),
                Err(e) => return Some(Probe::Down(format!("{asked}: {e}"))),
            };
            let said = format!("{asked}: HTTP {answer}");
            Some(match (self.health.is_some(), answer) {
                (true, 200..=299) => Probe::Healthy(said),
                (true, _) | (false, 500 | 502 | 503 | 504) => Probe::Down(said),
                (false, _) => Probe::Serving(said),
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
        assert_eq!(answer("u", status(500)), Delivery::AppFailed("HTTP 500 Internal Server Error from u".into()));
        for gateway in [502, 503, 504, 501, 429, 408] {
            assert!(matches!(answer("u", status(gateway)), Delivery::Unavailable(_)), "{gateway}");
        }
        assert!(answer("u", status(503)).is_retryable() && answer("u", status(429)).is_retryable() && !answer("u", status(404)).is_retryable());
        assert!(Delivery::Down("x".into()).is_retryable());
    }
}
