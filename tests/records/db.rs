//! A fresh database of either backend, so that one test body runs on both.

use std::path::PathBuf;
use std::sync::Arc;

use toolgate::registry::RegistryBuilder;
use toolgate::sqlite::SqliteStore;
use toolgate::store::postgres::PostgresStore;
use toolgate::store::{AuditQuery, AuditRecord, RecordStore};

use crate::postgres;

#[derive(Debug, Clone, Copy)]
pub(crate) enum Backend {
    Sqlite,
    Postgres,
}

/// One test's database, with what opens it again as another process would.
#[derive(Clone)]
pub(crate) enum Db {
    /// The file, unless the database is in memory.
    Sqlite(SqliteStore, Option<Arc<TempFile>>),
    Postgres(PostgresStore, String),
}

impl Db {
    /// A new, empty database; `None` when the backend is not installed (the test then skips).
    pub(crate) async fn fresh(backend: Backend, name: &str) -> Option<Db> {
        match backend {
            Backend::Sqlite => {
                let file = Arc::new(TempFile::new(name));
                Some(Db::Sqlite(SqliteStore::open(&file.0).unwrap(), Some(file)))
            }
            Backend::Postgres => {
                let url = postgres::shared()?.database(name).await;
                Some(Db::on_cluster(&url).await)
            }
        }
    }

    /// A private SQLite database in memory.
    pub(crate) fn in_memory() -> Db {
        Db::Sqlite(SqliteStore::in_memory().unwrap(), None)
    }

    /// The PostgreSQL database at `url`.
    pub(crate) async fn on_cluster(url: &str) -> Db {
        Db::Postgres(PostgresStore::connect(url).await.unwrap(), url.to_owned())
    }

    /// The same database, opened again with connections of its own.
    pub(crate) async fn reopen(&self) -> Db {
        match self {
            Db::Sqlite(_, file) => {
                let path = &file.as_ref().expect("a file").0;
                Db::Sqlite(SqliteStore::open(path).unwrap(), file.clone())
            }
            Db::Postgres(_, url) => Db::on_cluster(url).await,
        }
    }

    /// `builder` with this database's records, confirmations, call ceilings, tasks and audit.
    pub(crate) fn serve(&self, builder: RegistryBuilder) -> RegistryBuilder {
        match self {
            Db::Sqlite(store, _) => builder
                .confirmation_store(store.clone())
                .ceiling_store(store.clone())
                .task_store(store.clone())
                .audit(store.audit())
                .records(store.clone()),
            Db::Postgres(store, _) => builder
                .confirmation_store(store.clone())
                .ceiling_store(store.clone())
                .task_store(store.clone())
                .audit(store.audit())
                .records(store.clone()),
        }
    }

    /// Its tasks.
    pub(crate) fn tasks(&self) -> &dyn toolgate::store::TaskStore {
        match self {
            Db::Sqlite(store, _) => store,
            Db::Postgres(store, _) => store,
        }
    }

    pub(crate) fn store(&self) -> &dyn RecordStore {
        match self {
            Db::Sqlite(store, _) => store,
            Db::Postgres(store, _) => store,
        }
    }

    /// The newest audit row.
    pub(crate) async fn last_audit(&self) -> AuditRecord {
        let rows = self.store().audit_trail(&AuditQuery::newest(1)).await;
        rows.unwrap().remove(0)
    }

    /// Runs `sqlite` or `postgres` on the database directly, behind toolgate's back.
    pub(crate) async fn execute(&self, sqlite: &str, postgres: &str) {
        match self {
            Db::Sqlite(_, file) => rusqlite_open(&file.as_ref().expect("a file").0)
                .execute_batch(sqlite)
                .unwrap(),
            Db::Postgres(_, url) => {
                let database = url.rsplit('/').next().unwrap();
                postgres::shared()
                    .unwrap()
                    .execute(database, postgres)
                    .await;
            }
        }
    }

    /// Opens a database from a newer toolgate, which must be refused.
    pub(crate) async fn open_newer(backend: Backend) -> Option<String> {
        let db = Db::fresh(backend, "newer").await?;
        db.execute(
            "PRAGMA user_version = 99",
            "UPDATE toolgate_schema SET version = 99",
        )
        .await;
        Some(match &db {
            Db::Sqlite(_, file) => SqliteStore::open(&file.as_ref().expect("a file").0)
                .unwrap_err()
                .to_string(),
            Db::Postgres(_, url) => PostgresStore::connect(url).await.unwrap_err().to_string(),
        })
    }
}

fn rusqlite_open(path: &PathBuf) -> toolgate::sqlite::rusqlite::Connection {
    toolgate::sqlite::rusqlite::Connection::open(path).unwrap()
}

/// Runs a test body on both backends, as `name::sqlite` and `name::postgres`.
macro_rules! on_both_backends {
    ($($name:ident),* $(,)?) => {$(
        mod $name {
            #[tokio::test(flavor = "multi_thread", worker_threads = 2)]
            async fn sqlite() {
                super::$name($crate::db::Backend::Sqlite).await
            }

            #[tokio::test(flavor = "multi_thread", worker_threads = 2)]
            async fn postgres() {
                super::$name($crate::db::Backend::Postgres).await
            }
        }
    )*};
}
pub(crate) use on_both_backends;

/// A database file of its own, removed when the test ends.
pub(crate) struct TempFile(pub(crate) PathBuf);

impl TempFile {
    fn new(name: &str) -> Self {
        static NEXT: std::sync::atomic::AtomicUsize = std::sync::atomic::AtomicUsize::new(0);
        let n = NEXT.fetch_add(1, std::sync::atomic::Ordering::Relaxed);
        let path =
            std::env::temp_dir().join(format!("toolgate-{name}-{}-{n}.db", std::process::id()));
        let file = TempFile(path);
        file.remove();
        file
    }

    fn remove(&self) {
        for suffix in ["", "-wal", "-shm"] {
            let _ = std::fs::remove_file(format!("{}{suffix}", self.0.display()));
        }
    }
}

impl Drop for TempFile {
    fn drop(&mut self) {
        self.remove();
    }
}
