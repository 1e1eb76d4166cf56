//! The service on a loopback port, a tonic client of it, and the limits the tests share.

use std::sync::Arc;

use shortener_memory::MemoryRateLimiter;
use shortener_rls::descriptor_proto::RateLimitDescriptor;
use shortener_rls::proto::rate_limit_response::{Code, DescriptorStatus};
use shortener_rls::proto::rate_limit_service_client::RateLimitServiceClient;
use shortener_rls::proto::rate_limit_service_server::RateLimitServiceServer;
use shortener_rls::proto::{RateLimitRequest, RateLimitResponse};
use shortener_rls::{Limits, LimitsHandle, RateLimitServer, RuntimeDirectory, ServiceSettings};
use tonic::transport::Channel;

/// A service on a loopback port over the limits in `files`, and a client of it.
pub struct Service {
    pub client: RateLimitServiceClient<Channel>,
    pub directory: tempfile::TempDir,
    _stop: tokio::sync::watch::Sender<bool>,
}

pub async fn serve(files: &[(&str, &str)], settings: ServiceSettings) -> Service {
    let directory = tempfile::tempdir().unwrap();
    let config = directory.path().join("config");
    std::fs::create_dir(&config).unwrap();
    for (name, text) in files {
        std::fs::write(config.join(name), text).unwrap();
    }
    let runtime = RuntimeDirectory {
        root: directory.path().to_path_buf(),
        subdirectory: String::new(),
        appdirectory: "config".into(),
        merge_domains: false,
        algorithm: shortener_core::Algorithm::TokenBucket,
    };
    // As the process starts: a file that does not load takes down its own domain only.
    let seen = runtime.read().unwrap();
    let (limits, _errors) = Limits::load_each(&seen, false, shortener_core::Algorithm::TokenBucket);
    let handle = Arc::new(LimitsHandle::new(limits));
    let (stop, stopped) = tokio::sync::watch::channel(false);
    tokio::spawn(runtime.watch_forever(Arc::clone(&handle), seen, stopped));
    let service = RateLimitServer::new(Arc::new(MemoryRateLimiter::default()), handle, settings);
    let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
    let address = listener.local_addr().unwrap();
    tokio::spawn(tonic::transport::Server::builder().serve_with_incoming(
        RateLimitServiceServer::new(service),
        tonic::transport::server::TcpIncoming::from(listener),
    ));
    let client = RateLimitServiceClient::connect(format!("http://{address}"))
        .await
        .unwrap();
    Service {
        client,
        directory,
        _stop: stop,
    }
}

pub use shortener_rls::descriptor;

impl Service {
    pub async fn ask(
        &mut self,
        domain: &str,
        descriptors: Vec<RateLimitDescriptor>,
    ) -> RateLimitResponse {
        self.try_ask(domain, descriptors).await.unwrap()
    }

    /// As [`Service::ask`], with the gRPC status of a refused call.
    pub async fn try_ask(
        &mut self,
        domain: &str,
        descriptors: Vec<RateLimitDescriptor>,
    ) -> Result<RateLimitResponse, tonic::Status> {
        self.client
            .should_rate_limit(RateLimitRequest {
                domain: domain.to_owned(),
                descriptors,
                hits_addend: 0,
            })
            .await
            .map(tonic::Response::into_inner)
    }

    pub async fn one(
        &mut self,
        domain: &str,
        entries: &[(&str, &str)],
    ) -> (Code, DescriptorStatus) {
        let response = self.ask(domain, vec![descriptor(entries)]).await;
        assert_eq!(response.statuses.len(), 1);
        (response.overall_code(), response.statuses[0].clone())
    }
}

pub const LIMITS: &str = "
domain: shop
descriptors:
  - key: remote_address
    rate_limit:
      unit: minute
      requests_per_unit: 3
  - key: remote_address
    value: 50.0.0.5
    rate_limit:
      unit: second
      requests_per_unit: 0
  - key: path
    value: /api/*
    rate_limit:
      unit: minute
      requests_per_unit: 1
  - key: internal
    rate_limit:
      unlimited: true
  - key: user
    shadow_mode: true
    rate_limit:
      unit: hour
      requests_per_unit: 1
  - key: plan
    value: free
    rate_limit:
      name: free
      unit: minute
      requests_per_unit: 1
  - key: plan
    value: vip
    rate_limit:
      replaces:
        - name: free
      unit: minute
      requests_per_unit: 100
  - key: wide
    rate_limit:
      unit: minute
      requests_per_unit: 5
  - key: narrow
    rate_limit:
      unit: minute
      requests_per_unit: 1
";
