//! Reading a request body from a client that may pause: whole, for the fast lane, or paced as rmcp reads
//! it, failing with a 408 rather than waiting for ever.

use std::io;
use std::pin::Pin;
use std::sync::Arc;
use std::sync::atomic::{AtomicBool, Ordering};
use std::task::{Context, Poll};
use std::time::Duration;

use axum::body::Body;
use bytes::{Bytes, BytesMut};
use http_body::{Body as _, Frame, SizeHint};
use tokio::time::Sleep;

pin_project_lite::pin_project! {
    /// A request body that fails when its client pauses for longer than the idle timeout, and says so,
    /// so that the answer is a 408 rather than rmcp's 500 for a body it could not read. Its timer runs
    /// only while the body waits on its client: one whose bytes came with its headers, as most do, never
    /// sets a timer.
    pub(super) struct Paced {
        #[pin]
        body: Body,
        #[pin]
        pause: Option<Sleep>,
        idle: Duration,
        stalled: Arc<AtomicBool>,
    }
}

impl Paced {
    /// `body`, paced, and the flag it raises when it stalls.
    pub(super) fn wrap(body: Body, idle: Duration) -> (Body, Arc<AtomicBool>) {
        let stalled = Arc::new(AtomicBool::new(false));
        let paced = Paced {
            body,
            pause: None,
            idle,
            stalled: Arc::clone(&stalled),
        };
        (Body::new(paced), stalled)
    }
}

impl http_body::Body for Paced {
    type Data = Bytes;
    type Error = axum::BoxError;

    fn poll_frame(
        self: Pin<&mut Self>,
        cx: &mut Context<'_>,
    ) -> Poll<Option<Result<Frame<Self::Data>, Self::Error>>> {
        let this = self.project();
        let frame = std::task::ready!(poll_paced(this.body, this.pause, *this.idle, cx));
        Poll::Ready(frame.map(|frame| {
            frame.map_err(|unread| match unread {
                Unread::Paused => {
                    this.stalled.store(true, Ordering::Relaxed);
                    io::Error::new(io::ErrorKind::TimedOut, "the request body paused").into()
                }
                Unread::Failed(error) => error.into(),
            })
        }))
    }

    fn is_end_stream(&self) -> bool {
        self.body.is_end_stream()
    }

    fn size_hint(&self) -> SizeHint {
        self.body.size_hint()
    }
}

/// Why a request body could not be read.
#[derive(Debug)]
pub(super) enum Unread {
    /// Its client paused for longer than the idle timeout.
    Paused,
    /// Reading it failed.
    Failed(axum::Error),
}

/// `body`'s next frame, or [`Unread::Paused`] once it has waited on its client for `idle`: `pause`
/// times the wait, and is set only when the body waits.
fn poll_paced(
    body: Pin<&mut Body>,
    mut pause: Pin<&mut Option<Sleep>>,
    idle: Duration,
    cx: &mut Context<'_>,
) -> Poll<Option<Result<Frame<Bytes>, Unread>>> {
    if let Poll::Ready(frame) = body.poll_frame(cx) {
        pause.set(None);
        return Poll::Ready(frame.map(|frame| frame.map_err(Unread::Failed)));
    }
    if pause.is_none() {
        pause.set(Some(tokio::time::sleep(idle)));
    }
    match pause.as_pin_mut().map(|pause| pause.poll(cx)) {
        Some(Poll::Ready(())) => Poll::Ready(Some(Err(Unread::Paused))),
        _ => Poll::Pending,
    }
}

/// All of `body`'s bytes, paced as [`Paced`] paces them: its one piece as it came, or its pieces joined.
pub(super) async fn whole(mut body: Body, idle: Duration) -> Result<Bytes, Unread> {
    let mut pause = std::pin::pin!(None);
    let mut one = Bytes::new();
    let mut joined: Option<BytesMut> = None;
    while let Some(frame) =
        std::future::poll_fn(|cx| poll_paced(Pin::new(&mut body), pause.as_mut(), idle, cx)).await
    {
        let Ok(piece) = frame?.into_data() else {
            continue;
        };
        match &mut joined {
            Some(joined) => joined.extend_from_slice(&piece),
            None if one.is_empty() => one = piece,
            None => {
                let mut both = BytesMut::from(&one[..]);
                both.extend_from_slice(&piece);
                joined = Some(both);
            }
        }
    }
    Ok(joined.map_or(one, BytesMut::freeze))
}

#[cfg(test)]
mod tests {
    use std::convert::Infallible;

    use super::*;

    /// Longer than any of these bodies waits.
    const IDLE: Duration = Duration::from_secs(30);

    #[tokio::test]
    async fn a_body_is_read_whole_from_one_piece_or_many() {
        let one = Bytes::from_static(br#"{"id":1}"#);
        let read = whole(Body::from(one.clone()), IDLE).await.unwrap();
        assert_eq!(read.as_ptr(), one.as_ptr(), "one piece is taken as it came");
        let split: [&[&str]; 4] = [
            &[r#"{"id""#, ":1}"],
            &["", r#"{"i"#, "", "d\":", "1}"],
            &[""],
            &[],
        ];
        for pieces in split {
            let stream = futures_util::stream::iter(
                pieces
                    .iter()
                    .map(|piece| Ok::<_, Infallible>(Bytes::from(*piece))),
            );
            let read = whole(Body::from_stream(stream), IDLE).await.unwrap();
            assert_eq!(read, pieces.concat(), "{pieces:?}");
        }
    }
}
