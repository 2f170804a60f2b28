//! AWS configuration as users have it, for S3 and SQS alike: AWS's own loader walks the
//! standard chain (environment, `AWS_PROFILE` with the shared files, SSO and assume-role
//! profiles, web identity, container and instance metadata) once per run.

use std::sync::{Arc, LazyLock, OnceLock};
use std::time::SystemTime;

use anyhow::{anyhow, Result};
use aws_config::{BehaviorVersion, SdkConfig};
use aws_credential_types::provider::error::CredentialsError;
use aws_credential_types::provider::ProvideCredentials;
use aws_credential_types::Credentials;

/// The runtime the chain's own requests (STS, SSO, metadata) run on.
static RUNTIME: LazyLock<tokio::runtime::Runtime> = LazyLock::new(|| {
    tokio::runtime::Builder::new_multi_thread().worker_threads(1).enable_all().build().expect("tokio runtime")
});

/// What to do when no credentials were found: one line, no metadata-service error.
pub const NO_CREDENTIALS: &str = "no AWS credentials found: set AWS_ACCESS_KEY_ID and AWS_SECRET_ACCESS_KEY, or AWS_PROFILE naming a \
     profile in ~/.aws/credentials or ~/.aws/config (for SSO run `aws sso login` first), or run where web identity, container or \
     instance credentials are provided";

/// The loaded configuration of this run.
pub struct Aws {
    config: SdkConfig,
}

impl Aws {
    /// The configuration, loaded on first use.
    pub fn get() -> &'static Aws {
        static AWS: OnceLock<Aws> = OnceLock::new();
        AWS.get_or_init(|| {
            let http = aws_smithy_http_client::Builder::new()
                .tls_provider(aws_smithy_http_client::tls::Provider::Rustls(aws_smithy_http_client::tls::rustls_provider::CryptoMode::Ring))
                .build_https();
            // On a thread of its own: the caller may be inside another runtime.
            let load = aws_config::defaults(BehaviorVersion::latest()).http_client(http).load();
            let config = std::thread::scope(|s| s.spawn(|| RUNTIME.block_on(load)).join().expect("loading the AWS configuration"));
            Aws { config }
        })
    }

    /// The region: `AWS_REGION`, else the profile's.
    pub fn region(&self) -> Option<String> {
        self.config.region().map(|r| r.to_string())
    }

    /// The endpoint for a service (`S3`, `SQS`): `AWS_ENDPOINT_URL_<SERVICE>`, else
    /// `AWS_ENDPOINT_URL` or the profile's `endpoint_url`; None for AWS's own.
    pub fn endpoint(&self, service: &str) -> Option<String> {
        std::env::var(format!("AWS_ENDPOINT_URL_{}", service.to_uppercase()))
            .ok()
            .filter(|e| !e.is_empty())
            .or_else(|| self.config.endpoint_url().map(str::to_string))
    }

    /// Credentials from the chain, refreshed as they expire (the chain caches them).
    pub async fn credentials(&self) -> Result<Credentials> {
        let Some(provider) = self.config.credentials_provider() else {
            return Err(anyhow!(NO_CREDENTIALS));
        };
        provider.provide_credentials().await.map_err(|e| match e {
            CredentialsError::CredentialsNotLoaded(_) => anyhow!(NO_CREDENTIALS),
            // Say what failed, never the secret: the error names the provider and its cause.
            other => anyhow!("AWS credentials: {:#}", anyhow::Error::new(other)),
        })
    }
}

/// Credentials for object_store's S3 client, from the chain.
#[derive(Debug)]
pub struct ChainCredentials;

#[async_trait::async_trait]
impl object_store::CredentialProvider for ChainCredentials {
    type Credential = object_store::aws::AwsCredential;

    async fn get_credential(&self) -> object_store::Result<Arc<object_store::aws::AwsCredential>> {
        let credentials = Aws::get().credentials().await.map_err(|e| object_store::Error::Generic { store: "S3", source: e.into() })?;
        Ok(Arc::new(object_store::aws::AwsCredential {
            key_id: credentials.access_key_id().to_string(),
            secret_key: credentials.secret_access_key().to_string(),
            token: credentials.session_token().map(str::to_string),
        }))
    }
}

/// Signs a request with SigV4 for `service` in `region`: the headers to add.
pub fn sign(credentials: &Credentials, service: &str, region: &str, method: &str, url: &str, headers: &[(&str, &str)], body: &[u8]) -> Result<Vec<(String, String)>> {
    use aws_sigv4::http_request::{sign, SignableBody, SignableRequest, SigningSettings};
    let identity = credentials.clone().into();
    let params = aws_sigv4::sign::v4::SigningParams::builder()
        .identity(&identity)
        .region(region)
        .name(service)
        .time(SystemTime::now())
        .settings(SigningSettings::default())
        .build()?
        .into();
    let request = SignableRequest::new(method, url, headers.iter().copied(), SignableBody::Bytes(body))?;
    let (instructions, _) = sign(request, &params)?.into_parts();
    Ok(instructions.headers().map(|(k, v)| (k.to_string(), v.to_string())).collect())
}
