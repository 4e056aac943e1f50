//! The shop's embedded SQLite database: schema, demo data, and the queries the tools run.

use std::sync::{Arc, Mutex, MutexGuard};

use rusqlite::config::DbConfig;
use rusqlite::{Connection, OptionalExtension, params};
use schemars::JsonSchema;
use serde::{Deserialize, Serialize};

/// A handle to the database, shared by every tool call (`State<Db>`).
#[derive(Clone, Debug)]
pub struct Db(Arc<Mutex<Connection>>);

/// Where an order is in its life.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "snake_case")]
pub enum Status {
    /// Placed, waiting for someone to confirm it.
    Pending,
    /// Confirmed, waiting to be shipped.
    Confirmed,
    /// On its way.
    Shipped,
}

impl Status {
    fn as_str(self) -> &'static str {
        match self {
            Status::Pending => "pending",
            Status::Confirmed => "confirmed",
            Status::Shipped => "shipped",
        }
    }

    fn parse(text: &str) -> Status {
        match text {
            "confirmed" => Status::Confirmed,
            "shipped" => Status::Shipped,
            _ => Status::Pending,
        }
    }
}

/// One order, as the tools show it.
#[derive(Debug, Clone, PartialEq, Serialize, JsonSchema)]
pub struct Order {
    /// The order number, e.g. `RO-00012`.
    pub number: String,
    /// The customer's name.
    pub customer: String,
    /// Where it is in its life.
    pub status: Status,
    /// Total in euros.
    pub total_eur: f64,
    /// The carrier, once shipped.
    pub carrier: Option<String>,
}

/// Counts for the overview.
#[derive(Debug, Clone, PartialEq, Serialize, JsonSchema)]
pub struct Summary {
    /// Orders waiting for confirmation.
    pub pending: u64,
    /// Orders waiting to be shipped.
    pub confirmed: u64,
    /// Orders shipped.
    pub shipped: u64,
    /// Revenue of all orders, in euros.
    pub revenue_eur: f64,
}

/// The demo data's last week, and how many of the 30 orders were placed on each day.
const WEEK: [(&str, u32); 7] = [
    ("2026-11-24", 2),
    ("2026-11-25", 3),
    ("2026-11-26", 4),
    ("2026-11-27", 3),
    ("2026-11-28", 5),
    ("2026-11-29", 6),
    ("2026-11-30", 7),
];

/// The columns an [`Order`] is read from, in the order `order_from_row` reads them.
macro_rules! order_columns {
    () => {
        "number, customer, status, total_cents, carrier"
    };
}

/// The orders whose number or customer matches `?1`, optionally only those in status `?2`.
macro_rules! search {
    ($columns:expr, $rest:literal) => {
        concat!(
            "SELECT ",
            $columns,
            " FROM orders WHERE (number LIKE ?1 OR customer LIKE ?1) AND (?2 IS NULL OR status = ?2)",
            $rest
        )
    };
}

/// How many orders a search finds.
const SEARCH_COUNT: &str = search!("COUNT(*)", "");

/// The first `?3` orders a search finds, newest first.
const SEARCH_ROWS: &str = search!(order_columns!(), " ORDER BY number DESC LIMIT ?3");

const CUSTOMERS: [&str; 6] = [
    "Ada Lovelace",
    "Grace Hopper",
    "Alan Turing",
    "Katherine Johnson",
    "Edsger Dijkstra",
    "Barbara Liskov",
];

impl Db {
    /// Opens (or creates) the database at `path` (`:memory:` for a fresh one) and seeds it when empty.
    ///
    /// # Errors
    /// When SQLite cannot open or write the file.
    pub fn open(path: &str) -> rusqlite::Result<Db> {
        let connection = Connection::open(path)?;
        // ANCHOR: plan
        // One plan per statement, whatever its parameters: without it SQLite parses a cached statement
        // again whenever a new `LIKE` pattern or a `LIMIT` of 0 or 1 is bound, which costs more than
        // these queries of a small table.
        connection.set_db_config(DbConfig::SQLITE_DBCONFIG_ENABLE_QPSG, true)?;
        // ANCHOR_END: plan
        if path != ":memory:" {
            // Replicas on one machine share the file: readers never wait for a writer.
            connection.pragma_update(None, "journal_mode", "WAL")?;
        }
        connection.execute_batch(
            "CREATE TABLE IF NOT EXISTS orders (
                number TEXT PRIMARY KEY,
                customer TEXT NOT NULL,
                status TEXT NOT NULL,
                total_cents INTEGER NOT NULL,
                carrier TEXT,
                placed_on TEXT NOT NULL DEFAULT '2026-11-30'
            );",
        )?;
        // A database made before orders had a date gets the column.
        let dated: i64 = connection.query_row(
            "SELECT COUNT(*) FROM pragma_table_info('orders') WHERE name = 'placed_on'",
            [],
            |row| row.get(0),
        )?;
        if dated == 0 {
            connection.execute_batch(
                "ALTER TABLE orders ADD COLUMN placed_on TEXT NOT NULL DEFAULT '2026-11-30'",
            )?;
        }
        let count: i64 =
            connection.query_row("SELECT COUNT(*) FROM orders", [], |row| row.get(0))?;
        if count == 0 {
            let mut insert =
                connection.prepare("INSERT INTO orders VALUES (?1, ?2, ?3, ?4, ?5, ?6)")?;
            let days = WEEK
                .iter()
                .flat_map(|(day, orders)| std::iter::repeat_n(*day, *orders as usize));
            for (i, day) in (1..=30_u32).zip(days) {
                let status =
                    [Status::Pending, Status::Confirmed, Status::Shipped][(i % 3) as usize];
                let carrier = (status == Status::Shipped).then_some("DHL");
                let cents = 1_900 + i64::from(i * 7_919 % 20_000);
                insert.execute(params![
                    format!("RO-{i:05}"),
                    CUSTOMERS[(i as usize) % CUSTOMERS.len()],
                    status.as_str(),
                    cents,
                    carrier,
                    day
                ])?;
            }
        }
        Ok(Db(Arc::new(Mutex::new(connection))))
    }

    fn lock(&self) -> MutexGuard<'_, Connection> {
        self.0
            .lock()
            .unwrap_or_else(std::sync::PoisonError::into_inner)
    }

    /// Counts orders by status and sums the revenue.
    ///
    /// # Errors
    /// On a database error.
    pub fn summary(&self) -> rusqlite::Result<Summary> {
        let db = self.lock();
        let count = |status: Status| -> rusqlite::Result<u64> {
            let n: i64 = db.query_row(
                "SELECT COUNT(*) FROM orders WHERE status = ?1",
                [status.as_str()],
                |row| row.get(0),
            )?;
            Ok(n.unsigned_abs())
        };
        let cents: i64 = db.query_row(
            "SELECT COALESCE(SUM(total_cents), 0) FROM orders",
            [],
            |row| row.get(0),
        )?;
        Ok(Summary {
            pending: count(Status::Pending)?,
            confirmed: count(Status::Confirmed)?,
            shipped: count(Status::Shipped)?,
            revenue_eur: cents as f64 / 100.0,
        })
    }

    /// Orders whose number or customer contains `text`, optionally in one status: how many match, and the
    /// first `limit` of them, newest first.
    ///
    /// # Errors
    /// On a database error.
    pub fn search(
        &self,
        text: Option<&str>,
        status: Option<Status>,
        limit: usize,
    ) -> rusqlite::Result<(u64, Vec<Order>)> {
        let db = self.lock();
        let pattern = format!("%{}%", text.unwrap_or(""));
        let status = status.map(Status::as_str);
        // Each statement is parsed once per connection and then taken from the connection's cache.
        let total: i64 = db
            .prepare_cached(SEARCH_COUNT)?
            .query_row(params![pattern, status], |row| row.get(0))?;
        let mut query = db.prepare_cached(SEARCH_ROWS)?;
        let limit = i64::try_from(limit).unwrap_or(i64::MAX);
        let rows = query.query_map(params![pattern, status, limit], order_from_row)?;
        Ok((total.unsigned_abs(), rows.collect::<rusqlite::Result<_>>()?))
    }

    /// How many orders were placed on each day that has any, oldest first.
    ///
    /// # Errors
    /// On a database error.
    pub fn orders_per_day(&self) -> rusqlite::Result<Vec<(String, u64)>> {
        let db = self.lock();
        let mut query = db.prepare(
            "SELECT placed_on, COUNT(*) FROM orders GROUP BY placed_on ORDER BY placed_on",
        )?;
        let days = query.query_map([], |row| {
            let count: i64 = row.get(1)?;
            Ok((row.get(0)?, count.unsigned_abs()))
        })?;
        days.collect()
    }

    /// One order by number.
    ///
    /// # Errors
    /// On a database error.
    pub fn order(&self, number: &str) -> rusqlite::Result<Option<Order>> {
        self.lock()
            .query_row(
                concat!(
                    "SELECT ",
                    order_columns!(),
                    " FROM orders WHERE number = ?1"
                ),
                [number],
                order_from_row,
            )
            .optional()
    }

    /// Moves an order to `to` if it is in `from`; returns whether it moved.
    ///
    /// # Errors
    /// On a database error.
    pub fn advance(
        &self,
        number: &str,
        from: Status,
        to: Status,
        carrier: Option<&str>,
    ) -> rusqlite::Result<bool> {
        let changed = self.lock().execute(
            "UPDATE orders SET status = ?3, carrier = COALESCE(?4, carrier) WHERE number = ?1 AND status = ?2",
            params![number, from.as_str(), to.as_str(), carrier],
        )?;
        Ok(changed == 1)
    }
}

fn order_from_row(row: &rusqlite::Row<'_>) -> rusqlite::Result<Order> {
    let status: String = row.get(2)?;
    let cents: i64 = row.get(3)?;
    Ok(Order {
        number: row.get(0)?,
        customer: row.get(1)?,
        status: Status::parse(&status),
        total_eur: cents as f64 / 100.0,
        carrier: row.get(4)?,
    })
}

#[cfg(test)]
mod tests {
    use rusqlite::StatementStatus;

    use super::{Db, SEARCH_COUNT, SEARCH_ROWS, Status};

    /// A search counts every match and returns the first `limit`, newest first; searches for other
    /// text or with other limits reuse the statements as prepared: SQLite parses each only once.
    #[test]
    fn searches_count_every_match_and_reuse_their_statements() {
        let db = Db::open(":memory:").expect("opens");
        let (total, orders) = db.search(Some("Lovelace"), None, 3).expect("searches");
        assert_eq!(total, 5);
        let numbers: Vec<_> = orders.iter().map(|o| o.number.as_str()).collect();
        assert_eq!(numbers, ["RO-00030", "RO-00024", "RO-00018"]);
        assert!(orders.iter().all(|o| o.customer == "Ada Lovelace"));
        let (total, orders) = db
            .search(Some("ro-0001"), Some(Status::Confirmed), 10)
            .expect("searches");
        assert_eq!(total, 4);
        assert!(
            orders
                .iter()
                .all(|o| o.number.starts_with("RO-0001") && o.status == Status::Confirmed)
        );
        assert_eq!(
            db.search(Some("Lovelace"), None, 0).expect("searches"),
            (5, Vec::new())
        );
        assert_eq!(
            db.search(Some("nobody"), None, 1).expect("searches"),
            (0, Vec::new())
        );
        let (total, orders) = db.search(None, None, usize::MAX).expect("searches");
        assert_eq!((total, orders.len()), (30, 30));
        assert_eq!(
            Some(&orders[0]),
            db.order("RO-00030").expect("reads").as_ref()
        );
        let connection = db.lock();
        for sql in [SEARCH_COUNT, SEARCH_ROWS] {
            let statement = connection.prepare_cached(sql).expect("cached");
            assert_eq!(statement.get_status(StatementStatus::RePrepare), 0, "{sql}");
        }
    }
}
