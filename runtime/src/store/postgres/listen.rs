//! `LISTEN` on a connection of its own: every `NOTIFY` of a change of the records, from any replica,
//! moves a counter that [`RecordStore::changed`](crate::store::RecordStore::changed) waits on. A lost
//! connection is reopened with backoff, and reopening counts as a change, since what was said meanwhile
//! was not heard.

use std::time::Duration;

use tokio::sync::watch;
use tokio_postgres::AsyncMessage;

use super::CHANNEL;

/// Starts listening, until every receiver is dropped.
pub(super) fn spawn(config: tokio_postgres::Config) -> watch::Receiver<u64> {
    let (heard, receiver) = watch::channel(0);
    tokio::spawn(async move {
        let mut retry = Retry {
            backoff: FIRST_BACKOFF,
            down: false,
        };
        while let Err(error) = listen(&config, &heard, &mut retry).await {
            if !retry.down {
                tracing::warn!(target: "toolgate::records", %error, "lost the PostgreSQL LISTEN connection; reconnecting");
                retry.down = true;
            }
            tokio::time::sleep(retry.backoff).await;
            retry.backoff = (retry.backoff * 2).min(Duration::from_secs(5));
        }
    });
    receiver
}

const FIRST_BACKOFF: Duration = Duration::from_millis(100);

/// How the next reconnection waits, and whether the last attempt failed.
struct Retry {
    backoff: Duration,
    down: bool,
}

/// One connection's life: listens until it is lost (`Err`), or until nobody is interested (`Ok`).
async fn listen(
    config: &tokio_postgres::Config,
    heard: &watch::Sender<u64>,
    retry: &mut Retry,
) -> Result<(), String> {
    let (client, mut connection) = config
        .connect(tokio_postgres::NoTls)
        .await
        .map_err(|e| e.to_string())?;
    let messages = async {
        loop {
            match std::future::poll_fn(|cx| connection.poll_message(cx)).await {
                Some(Ok(AsyncMessage::Notification(_))) => heard.send_modify(|n| *n += 1),
                Some(Ok(_)) => {}
                Some(Err(error)) => return Err(error.to_string()),
                None => return Err("the server closed the connection".to_owned()),
            }
        }
    };
    let subscribe = async {
        client
            .batch_execute(&format!("LISTEN {CHANNEL}"))
            .await
            .map_err(|e| e.to_string())?;
        if retry.down {
            tracing::info!(target: "toolgate::records", "listening for changes again");
        }
        *retry = Retry {
            backoff: FIRST_BACKOFF,
            down: false,
        };
        // What changed while nobody listened was not heard: count it as a change.
        heard.send_modify(|n| *n += 1);
        heard.closed().await;
        Ok(())
    };
    tokio::select! {
        ended = messages => ended,
        done = subscribe => done,
    }
}
