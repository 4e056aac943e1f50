//! stdio: one loop reads the client's lines and writes every answer. The hot requests of a session run on
//! this loop, through the session's own peer: one `initialize` opened on a version that negotiates once,
//! or one a 2026-07-28 request opened, whose requests each declare what that version requires (then
//! through rmcp's dispatch, as over HTTP); every other line goes to rmcp's service as it came, byte for
//! byte (the handshake, notifications, the client's answers to questions, malformed input), and what rmcp
//! writes is copied out a whole line at a time. Answers are written to a buffer that is flushed when no
//! further request is already waiting to be read, so a burst of requests gets its answers in few writes.
//!
//! A call sends its progress and log messages through rmcp's loop before it ends, so those lines are
//! copied out before its answer is written. A `notifications/cancelled` for a request running here
//! cancels it; when the client closes its end, the calls running here are dropped, as rmcp cancels its
//! own, and the loop ends once rmcp has.

use std::collections::{HashMap, VecDeque};
use std::future::Future;
use std::io;
use std::pin::Pin;
use std::sync::{Arc, Mutex};

use bytes::Buf;
use futures_util::FutureExt;
use futures_util::stream::{FuturesUnordered, StreamExt};
use rmcp::model::{ClientRequest, JsonRpcMessage, ProtocolVersion, RequestId};
use rmcp::service::{RxJsonRpcMessage, TxJsonRpcMessage};
use rmcp::transport::Transport;
use rmcp::transport::async_rw::AsyncRwTransport;
use rmcp::{Peer, RoleServer, ServerHandler, ServiceExt};
use tokio::io::{AsyncBufReadExt, AsyncRead, AsyncReadExt, AsyncWrite, AsyncWriteExt, BufReader};
use tokio::io::{BufWriter, DuplexStream};
use tokio::sync::{mpsc, oneshot};
use tokio_util::sync::CancellationToken;

use crate::registry::Handover;
use crate::sync::Locked;

use super::super::handler::McpHandler;
use super::{Answer, FastRequest, negotiated_once};

/// The most bytes rmcp's side of the loop buffers in each direction before its writer waits.
const PIPE_BYTES: usize = 1 << 20;

/// How many bytes the pipe to the client should hold: an answer up to this size is written at once, not
/// 64 KiB (a pipe's default) each time the client has read some. 1 MiB is the most an unprivileged
/// process may ask for unless the system says otherwise (`/proc/sys/fs/pipe-max-size`).
#[cfg(target_os = "linux")]
const STDOUT_PIPE_BYTES: usize = 1 << 20;

type Running<'a> = Pin<Box<dyn Future<Output = (RequestId, Answer)> + Send + 'a>>;

/// The `requestId` of a `notifications/cancelled`.
#[derive(serde::Deserialize)]
struct Cancelled {
    params: CancelledParams,
}

#[derive(serde::Deserialize)]
#[serde(rename_all = "camelCase")]
struct CancelledParams {
    request_id: RequestId,
}

/// Serves one client on `input` and `output` with `handler`, until the client closes `input` and rmcp's
/// service has ended.
pub(in crate::mcp) async fn serve<H, R, W>(
    handler: McpHandler<H>,
    input: R,
    output: W,
) -> io::Result<()>
where
    H: ServerHandler + Clone + Send + Sync + 'static,
    R: AsyncRead + Unpin,
    W: AsyncWrite + Unpin,
{
    let (to_rmcp, rmcp_input) = tokio::io::duplex(PIPE_BYTES);
    let (rmcp_output, mut from_rmcp) = tokio::io::duplex(PIPE_BYTES);
    let (peer_sender, mut peer_receiver) = oneshot::channel();
    let handovers = Handovers::default();
    // rmcp's service and this loop serve one session with one handler: its log level and the tools its
    // searches found are the session's, whichever of the two serves a request.
    let transport = WithHandovers {
        inner: AsyncRwTransport::new_server(rmcp_input, rmcp_output),
        handovers: handovers.clone(),
    };
    let session = tokio::spawn(session(handler.clone(), transport, peer_sender));
    // Lines for rmcp go through a task of their own, so that this loop never waits on rmcp's reading.
    let (forward, lines_for_rmcp) = mpsc::unbounded_channel();
    tokio::spawn(pass_on(lines_for_rmcp, to_rmcp));
    let mut forward = Some(forward);

    let registry = &handler.shared.registry;
    let mut input = BufReader::new(input);
    let mut out = BufWriter::new(output);
    let mut line = Vec::new();
    let mut from_rmcp_bytes = Vec::new();
    let mut peer: Option<Peer<RoleServer>> = None;
    let mut running: FuturesUnordered<Running<'_>> = FuturesUnordered::new();
    let mut cancels: HashMap<RequestId, CancellationToken> = HashMap::new();
    // A call's future is large. Most calls finish when first polled, so the box each is made in is
    // reused for the next, and only a call that waits keeps it (then the next gets a new one).
    let mut slot = Box::pin(None);
    loop {
        tokio::select! {
            read = from_rmcp.read_buf(&mut from_rmcp_bytes) => {
                if read? == 0 {
                    break;
                }
                copy_lines(&mut from_rmcp_bytes, &mut out).await?;
            }
            Some((id, answer)) = running.next(), if !running.is_empty() => {
                cancels.remove(&id);
                write_answer(&answer, &mut from_rmcp, &mut from_rmcp_bytes, &mut out).await?;
            }
            read = input.read_until(b'\n', &mut line), if forward.is_some() => {
                if read? == 0 {
                    // The client is gone: what runs here is dropped, and rmcp is told by the end of its input.
                    if !line.is_empty() && let Some(forward) = &forward {
                        let _ = forward.send(std::mem::take(&mut line));
                    }
                    forward = None;
                    running.clear();
                    cancels.drain().for_each(|(_, ct)| ct.cancel());
                    continue;
                }
                if peer.is_none() {
                    peer = peer_receiver.try_recv().ok();
                }
                // A session `initialize` opened on a version that negotiates once, or one that a
                // request with its version in its `_meta` opened (no `initialize`, so no peer info),
                // whose requests each declare what that version requires. There a call that may
                // reach the client's peer is left to rmcp, which judges what it may send by the
                // version its request names.
                let (parsed, inline) = match peer.as_ref().map(Peer::peer_info) {
                    Some(Some(info)) if negotiated_once(&info.protocol_version) => {
                        (FastRequest::parse(&line, true, None), false)
                    }
                    Some(None) => {
                        let version = Some(&ProtocolVersion::V_2026_07_28);
                        (FastRequest::parse(&line, true, version), true)
                    }
                    _ => (None, false),
                };
                let mut hot = parsed;
                if let Some(request) = &mut hot
                    && let Err(handover) = request.resolve(registry, |_, sends| !(inline && sends))
                {
                    handovers.push(request.id().clone(), handover);
                    hot = None;
                }
                match (hot, &peer) {
                    (Some(mut hot), Some(peer)) => {
                        line.clear();
                        let id = hot.id().clone();
                        let sends = hot.sends();
                        let context = hot.context(peer.clone());
                        let ct = context.ct.clone();
                        let (handler, answer_id) = (&handler, id.clone());
                        slot.set(Some(async move {
                            let (answer, _) = hot.answer(handler, context, None).await;
                            (answer_id, answer)
                        }));
                        match slot.as_mut().as_pin_mut().and_then(FutureExt::now_or_never) {
                            Some((_, answer)) if sends => {
                                write_answer(&answer, &mut from_rmcp, &mut from_rmcp_bytes, &mut out)
                                    .await?;
                            }
                            Some((_, answer)) => {
                                write_line(&answer, &mut out).await?;
                            }
                            None => {
                                cancels.insert(id, ct);
                                let mut call = std::mem::replace(&mut slot, Box::pin(None));
                                running.push(Box::pin(async move {
                                    call.as_mut().as_pin_mut().expect("a call is set").await
                                }));
                            }
                        }
                    }
                    _ => {
                        cancel_here(&line, &mut cancels);
                        if let Some(forward) = &forward {
                            let _ = forward.send(std::mem::take(&mut line));
                        }
                    }
                }
            }
        }
        if input.buffer().is_empty() {
            out.flush().await?;
        }
    }
    out.flush().await?;
    session.await.map_err(io::Error::other)?
}

/// Lets the pipe on stdout hold [`STDOUT_PIPE_BYTES`], unless it holds more already. Nothing changes
/// when stdout is no pipe (a terminal, a file), or when the system refuses (the user's pipes are over
/// their quota, or the most it allows is less).
#[cfg(target_os = "linux")]
pub(in crate::mcp) fn enlarge_stdout_pipe() {
    let stdout = std::io::stdout();
    if rustix::pipe::fcntl_getpipe_size(&stdout).is_ok_and(|bytes| bytes < STDOUT_PIPE_BYTES) {
        let _ = rustix::pipe::fcntl_setpipe_size(&stdout, STDOUT_PIPE_BYTES);
    }
}

/// Runs rmcp's service for the session on its side of the pipes, handing over its peer once the client
/// has initialized.
async fn session<H: ServerHandler + Clone + Send + Sync + 'static>(
    handler: McpHandler<H>,
    transport: WithHandovers<Rmcp>,
    peer: oneshot::Sender<Peer<RoleServer>>,
) -> io::Result<()> {
    let running = handler
        .serve(transport)
        .await
        .map_err(|e| io::Error::other(e.to_string()))?;
    let _ = peer.send(running.peer().clone());
    running
        .waiting()
        .await
        .map_err(|e| io::Error::other(e.to_string()))?;
    Ok(())
}

/// rmcp's transport: its side of the pipes.
type Rmcp = AsyncRwTransport<RoleServer, DuplexStream, DuplexStream>;

/// The lookups of the calls the loop passed on to rmcp, with their requests' ids, in the order it passed
/// them: at most [`HANDOVERS`], the oldest dropped (its call is then looked up again).
#[derive(Clone, Default)]
struct Handovers(Arc<Mutex<VecDeque<(RequestId, Handover)>>>);

/// How many lookups wait for rmcp to read their calls, at most.
const HANDOVERS: usize = 64;

impl Handovers {
    fn push(&self, id: RequestId, handover: Handover) {
        let mut waiting = self.0.locked();
        if waiting.len() == HANDOVERS {
            waiting.pop_front();
        }
        waiting.push_back((id, handover));
    }

    /// The lookup passed on with call `id`. rmcp reads calls in the order they were passed on, so those
    /// before it are stale (rmcp read them as no call) and dropped.
    fn take(&self, id: &RequestId) -> Option<Handover> {
        let mut waiting = self.0.locked();
        let at = waiting.iter().position(|(passed, _)| passed == id)?;
        waiting.drain(..at);
        waiting.pop_front().map(|(_, handover)| handover)
    }
}

/// rmcp's transport, which attaches to each call the lookup the loop passed on with it.
struct WithHandovers<T> {
    inner: T,
    handovers: Handovers,
}

impl<T: Transport<RoleServer>> Transport<RoleServer> for WithHandovers<T> {
    type Error = T::Error;

    fn send(
        &mut self,
        item: TxJsonRpcMessage<RoleServer>,
    ) -> impl Future<Output = Result<(), Self::Error>> + Send + 'static {
        self.inner.send(item)
    }

    async fn receive(&mut self) -> Option<RxJsonRpcMessage<RoleServer>> {
        let mut message = self.inner.receive().await?;
        if let JsonRpcMessage::Request(request) = &mut message
            && let ClientRequest::CallToolRequest(call) = &mut request.request
            && let Some(handover) = self.handovers.take(&request.id)
        {
            call.extensions.insert(handover);
        }
        Some(message)
    }

    fn close(&mut self) -> impl Future<Output = Result<(), Self::Error>> + Send {
        self.inner.close()
    }
}

/// Writes the lines meant for rmcp into its input, and closes it when the loop lets go.
async fn pass_on(mut lines: mpsc::UnboundedReceiver<Vec<u8>>, mut to_rmcp: DuplexStream) {
    while let Some(line) = lines.recv().await {
        if to_rmcp.write_all(&line).await.is_err() {
            return;
        }
    }
    let _ = to_rmcp.shutdown().await;
}

/// Copies the complete lines among `bytes` to `out`, keeping a partial last line for later.
async fn copy_lines<W: AsyncWrite + Unpin>(
    bytes: &mut Vec<u8>,
    out: &mut BufWriter<W>,
) -> io::Result<()> {
    if let Some(end) = bytes.iter().rposition(|b| *b == b'\n') {
        out.write_all(&bytes[..=end]).await?;
        bytes.drain(..=end);
    }
    Ok(())
}

/// Writes the answer of a call that ran here, after whatever rmcp has already written: the call's
/// progress and log messages, which it sent before it ended.
async fn write_answer<W: AsyncWrite + Unpin>(
    answer: &Answer,
    from_rmcp: &mut DuplexStream,
    from_rmcp_bytes: &mut Vec<u8>,
    out: &mut BufWriter<W>,
) -> io::Result<()> {
    while let Some(read) = from_rmcp.read_buf(from_rmcp_bytes).now_or_never() {
        if read? == 0 {
            break;
        }
    }
    copy_lines(from_rmcp_bytes, out).await?;
    write_line(answer, out).await
}

/// Writes `answer` and its newline: into the buffer when they fit; else, to a writer that takes several
/// slices at once (a pipe), in one write of all their pieces, so that a long answer (a listing) reaches
/// the client whole, with no second write for its last byte, and is not copied on the way.
async fn write_line<W: AsyncWrite + Unpin>(
    answer: &Answer,
    out: &mut BufWriter<W>,
) -> io::Result<()> {
    out.write_all_buf(&mut answer.pieces().chain(&b"\n"[..]))
        .await
}

/// Cancels the call running here that a `notifications/cancelled` line names, if any.
fn cancel_here(line: &[u8], cancels: &mut HashMap<RequestId, CancellationToken>) {
    if cancels.is_empty() || !line.windows(23).any(|w| w == b"notifications/cancelled") {
        return;
    }
    if let Ok(cancelled) = serde_json::from_slice::<Cancelled>(line)
        && let Some(ct) = cancels.remove(&cancelled.params.request_id)
    {
        ct.cancel();
    }
}
