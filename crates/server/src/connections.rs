//! Connections: how many Sleuth keeps open, and how long a client may take.
//!
//! `serve` accepts a connection only while fewer than `server.max_connections` are open;
//! past that, clients wait in the operating system's accept queue, which costs this process
//! nothing. Each connection runs under a clock (`ConnectionClock`) that closes it when its
//! client stalls:
//! - a new connection, or a kept-alive one whose client started a request, must deliver the
//!   request's headers within `server.header_read_timeout_seconds`;
//! - a kept-alive connection with no request at all is closed after
//!   `server.keep_alive_idle_seconds`, and so is one whose client stops reading an answer
//!   for that long;
//! - while a request is being handled, the connection has no clock: the body has its own
//!   deadline (`body_deadline`, `server.body_read_timeout_seconds`, answered 408), and a
//!   handler's own time is bounded by what it does.
//!
//! hyper's own header timer cannot tell an idle kept-alive connection from one that is
//! slowly sending headers, so the clock watches the bytes itself.

use std::future::Future;
use std::io;
use std::pin::Pin;
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{Arc, Mutex};
use std::task::{Context, Poll, Waker, ready};
use std::time::Duration;

use axum::Router;
use axum::body::{Body, Bytes};
use axum::extract::{Request, State};
use axum::http::{HeaderValue, header};
use axum::middleware::Next;
use axum::response::{IntoResponse, Response};
use http_body::{Body as HttpBody, Frame, SizeHint};
use hyper_util::rt::{TokioIo, TokioTimer};
use hyper_util::server::graceful::GracefulShutdown;
use tokio::io::{AsyncRead, AsyncWrite, ReadBuf};
use tokio::net::{TcpListener, TcpStream};
use tokio::sync::Semaphore;
use tokio::time::{Instant, Sleep};
use tower::ServiceExt;

use crate::error::{ApiError, ErrorCode};
use sleuth_jobs::settings::ServerSettings;

/// The connection bounds of `serve`, from `ServerSettings`.
#[derive(Debug, Clone, Copy)]
pub struct ConnectionLimits {
    pub max_connections: usize,
    pub header_read_timeout: Duration,
    pub keep_alive_idle: Duration,
}

impl From<&ServerSettings> for ConnectionLimits {
    fn from(settings: &ServerSettings) -> ConnectionLimits {
        ConnectionLimits {
            max_connections: settings.max_connections,
            header_read_timeout: Duration::from_secs(settings.header_read_timeout_seconds),
            keep_alive_idle: Duration::from_secs(settings.keep_alive_idle_seconds),
        }
    }
}

/// The address of the client at the other end of a request's connection (a proxy's,
/// behind one); what the console's sign-in limit per address counts by.
#[derive(Debug, Clone, Copy)]
pub struct PeerAddress(pub std::net::SocketAddr);

/// Serves `router` on `listener` until `shutdown` completes, then lets in-flight requests
/// finish.
pub async fn serve(
    listener: TcpListener,
    router: Router,
    limits: ConnectionLimits,
    shutdown: impl Future<Output = ()> + Send + 'static,
) -> io::Result<()> {
    let open = Arc::new(Semaphore::new(limits.max_connections));
    let graceful = GracefulShutdown::new();
    let mut http = hyper::server::conn::http1::Builder::new();
    http.timer(TokioTimer::new())
        .header_read_timeout(None)
        .keep_alive(true);
    tokio::pin!(shutdown);
    loop {
        let permit = tokio::select! {
            permit = Arc::clone(&open).acquire_owned() => permit.map_err(io::Error::other)?,
            () = &mut shutdown => break,
        };
        let (stream, peer) = tokio::select! {
            accepted = listener.accept() => match accepted {
                Ok((stream, peer)) => (stream, peer),
                Err(error) => {
                    // Out of file descriptors, or a connection reset while queued: the
                    // listener itself is fine, so wait a moment rather than spin.
                    tracing::warn!(%error, "accept failed");
                    tokio::time::sleep(Duration::from_millis(50)).await;
                    continue;
                }
            },
            () = &mut shutdown => break,
        };
        let _ = stream.set_nodelay(true);
        let clock = ConnectionClock::new(limits);
        let io = TokioIo::new(TimedIo::new(stream, Arc::clone(&clock)));
        let router = router.clone();
        let service =
            hyper::service::service_fn(move |request: hyper::Request<hyper::body::Incoming>| {
                let handling = clock.request_started();
                let router = router.clone();
                let mut request = request.map(Body::new);
                request.extensions_mut().insert(PeerAddress(peer));
                async move {
                    let response = router.oneshot(request).await;
                    drop(handling);
                    response
                }
            });
        let connection = graceful.watch(http.serve_connection(io, service));
        tokio::spawn(async move {
            if let Err(error) = connection.await {
                tracing::debug!(%error, "connection ended");
            }
            drop(permit);
        });
    }
    drop(listener);
    graceful.shutdown().await;
    Ok(())
}

/// What a connection is doing, for its timeouts. Shared by its I/O and its service, which
/// its one task polls.
struct ConnectionClock {
    limits: ConnectionLimits,
    state: Mutex<ClockState>,
}

struct ClockState {
    /// Requests handed to the router and not answered yet.
    handling: usize,
    /// When the client began the request now being read (a new connection counts as
    /// begun); None while a kept-alive connection is idle.
    request_begun: Option<Instant>,
    /// The last time the connection made progress: a request answered or bytes written.
    last_progress: Instant,
    /// The task that last read while a request was handled.
    reader: Option<Waker>,
}

impl ConnectionClock {
    fn new(limits: ConnectionLimits) -> Arc<ConnectionClock> {
        let now = Instant::now();
        Arc::new(ConnectionClock {
            limits,
            state: Mutex::new(ClockState {
                handling: 0,
                request_begun: Some(now),
                last_progress: now,
                reader: None,
            }),
        })
    }

    fn with<T>(&self, change: impl FnOnce(&mut ClockState) -> T) -> T {
        let mut state = self
            .state
            .lock()
            .unwrap_or_else(std::sync::PoisonError::into_inner);
        change(&mut state)
    }

    fn request_started(self: &Arc<Self>) -> Handling {
        self.with(|state| {
            state.handling += 1;
            state.request_begun = None;
        });
        Handling(Arc::clone(self))
    }

    fn bytes_read(&self) {
        self.with(|state| {
            if state.handling == 0 && state.request_begun.is_none() {
                state.request_begun = Some(Instant::now());
            }
        });
    }

    fn bytes_written(&self) {
        self.with(|state| state.last_progress = Instant::now());
    }

    /// When a read still waiting must give up: None while a request is handled. hyper
    /// reads once more while it handles a request and not again until the socket wakes
    /// it, so that read's waker is kept for `Handling` to wake, which arms the idle clock.
    fn read_deadline(&self, context: &Context<'_>) -> Option<Instant> {
        self.with(|state| {
            if state.handling > 0 {
                state.reader = Some(context.waker().clone());
                None
            } else if let Some(begun) = state.request_begun {
                Some(begun + self.limits.header_read_timeout)
            } else {
                Some(state.last_progress + self.limits.keep_alive_idle)
            }
        })
    }

    fn write_deadline(&self) -> Instant {
        self.with(|state| state.last_progress + self.limits.keep_alive_idle)
    }
}

/// A request in the router; dropping it marks the request answered.
struct Handling(Arc<ConnectionClock>);

impl Drop for Handling {
    fn drop(&mut self) {
        let reader = self.0.with(|state| {
            state.handling = state.handling.saturating_sub(1);
            state.last_progress = Instant::now();
            state.reader.take()
        });
        if let Some(reader) = reader {
            reader.wake();
        }
    }
}

/// A TCP stream that fails with `TimedOut` when its connection's clock runs out.
struct TimedIo {
    stream: TcpStream,
    clock: Arc<ConnectionClock>,
    read_timer: Pin<Box<Sleep>>,
    write_timer: Pin<Box<Sleep>>,
}

impl TimedIo {
    fn new(stream: TcpStream, clock: Arc<ConnectionClock>) -> TimedIo {
        let far = Instant::now() + Duration::from_secs(86_400);
        TimedIo {
            stream,
            clock,
            read_timer: Box::pin(tokio::time::sleep_until(far)),
            write_timer: Box::pin(tokio::time::sleep_until(far)),
        }
    }
}

/// Ready with `TimedOut` when `deadline` passed; otherwise arms `timer` to wake the task
/// at the deadline.
fn expired(timer: &mut Pin<Box<Sleep>>, deadline: Instant, context: &mut Context<'_>) -> bool {
    if timer.deadline() != deadline {
        timer.as_mut().reset(deadline);
    }
    timer.as_mut().poll(context).is_ready()
}

fn timed_out(what: &str) -> io::Error {
    io::Error::new(io::ErrorKind::TimedOut, what.to_string())
}

impl AsyncRead for TimedIo {
    fn poll_read(
        mut self: Pin<&mut Self>,
        context: &mut Context<'_>,
        buffer: &mut ReadBuf<'_>,
    ) -> Poll<io::Result<()>> {
        let this = &mut *self;
        let before = buffer.filled().len();
        match Pin::new(&mut this.stream).poll_read(context, buffer) {
            Poll::Ready(result) => {
                if result.is_ok() && buffer.filled().len() > before {
                    this.clock.bytes_read();
                }
                Poll::Ready(result)
            }
            Poll::Pending => match this.clock.read_deadline(context) {
                Some(deadline) if expired(&mut this.read_timer, deadline, context) => Poll::Ready(
                    Err(timed_out("the client sent no complete request in time")),
                ),
                _ => Poll::Pending,
            },
        }
    }
}

impl TimedIo {
    /// What a write returned, with the connection's progress noted, or `TimedOut` when the
    /// client has read nothing for the idle timeout.
    fn after_write(
        &mut self,
        written: Poll<io::Result<usize>>,
        context: &mut Context<'_>,
    ) -> Poll<io::Result<usize>> {
        match written {
            Poll::Ready(result) => {
                if matches!(result, Ok(written) if written > 0) {
                    self.clock.bytes_written();
                }
                Poll::Ready(result)
            }
            Poll::Pending => {
                let deadline = self.clock.write_deadline();
                if expired(&mut self.write_timer, deadline, context) {
                    Poll::Ready(Err(timed_out("the client stopped reading the answer")))
                } else {
                    Poll::Pending
                }
            }
        }
    }
}

impl AsyncWrite for TimedIo {
    fn poll_write(
        mut self: Pin<&mut Self>,
        context: &mut Context<'_>,
        bytes: &[u8],
    ) -> Poll<io::Result<usize>> {
        let written = Pin::new(&mut self.stream).poll_write(context, bytes);
        self.after_write(written, context)
    }

    fn poll_write_vectored(
        mut self: Pin<&mut Self>,
        context: &mut Context<'_>,
        buffers: &[io::IoSlice<'_>],
    ) -> Poll<io::Result<usize>> {
        let written = Pin::new(&mut self.stream).poll_write_vectored(context, buffers);
        self.after_write(written, context)
    }

    fn is_write_vectored(&self) -> bool {
        self.stream.is_write_vectored()
    }

    fn poll_flush(mut self: Pin<&mut Self>, context: &mut Context<'_>) -> Poll<io::Result<()>> {
        Pin::new(&mut self.stream).poll_flush(context)
    }

    fn poll_shutdown(mut self: Pin<&mut Self>, context: &mut Context<'_>) -> Poll<io::Result<()>> {
        Pin::new(&mut self.stream).poll_shutdown(context)
    }
}

/// The layer that gives every request body a deadline: a body still arriving after
/// `timeout` fails, and the request is answered 408 `request_timeout` whatever its handler
/// made of the failure, with `Connection: close` (the rest of the body is never read).
pub async fn body_deadline(
    State(timeout): State<Duration>,
    request: Request,
    next: Next,
) -> Response {
    if request.body().is_end_stream() {
        return next.run(request).await;
    }
    let expired = Arc::new(AtomicBool::new(false));
    let request = request.map(|body| {
        Body::new(DeadlineBody {
            body,
            timer: Box::pin(tokio::time::sleep(timeout)),
            expired: Arc::clone(&expired),
        })
    });
    let response = next.run(request).await;
    if !expired.load(Ordering::Relaxed) {
        return response;
    }
    let mut response = ApiError::new(
        ErrorCode::RequestTimeout,
        "the request body did not arrive in time (server.body_read_timeout_seconds)",
    )
    .into_response();
    response
        .headers_mut()
        .insert(header::CONNECTION, HeaderValue::from_static("close"));
    response
}

struct DeadlineBody {
    body: Body,
    timer: Pin<Box<Sleep>>,
    expired: Arc<AtomicBool>,
}

#[derive(Debug, thiserror::Error)]
#[error("the request body did not arrive in time")]
struct BodyTimedOut;

impl HttpBody for DeadlineBody {
    type Data = Bytes;
    type Error = axum::Error;

    fn poll_frame(
        mut self: Pin<&mut Self>,
        context: &mut Context<'_>,
    ) -> Poll<Option<Result<Frame<Bytes>, axum::Error>>> {
        let this = &mut *self;
        if let Poll::Ready(frame) = Pin::new(&mut this.body).poll_frame(context) {
            return Poll::Ready(frame);
        }
        ready!(this.timer.as_mut().poll(context));
        this.expired.store(true, Ordering::Relaxed);
        Poll::Ready(Some(Err(axum::Error::new(BodyTimedOut))))
    }

    fn is_end_stream(&self) -> bool {
        self.body.is_end_stream()
    }

    fn size_hint(&self) -> SizeHint {
        self.body.size_hint()
    }
}
