//! A PostgreSQL store opened read-only (`OpenMode::ReadOnly`: a monitor, an auditor;
//! `docs/store.md`, "The PostgreSQL store"): it reads the log as it grows, refuses both writes
//! with `StoreState::ReadOnly`, never migrates the schema, and its sessions are
//! `default_transaction_read_only`, so the server itself refuses a write through them.

mod common;

use common::{key, p, setup_with};
use memlineage::error::StoreState;
use memlineage::{Error, Memory, OpenMode, StoreLocation, WriteRequest};
use memlineage_core::entry::EntryKind;

#[test]
fn a_read_only_open_reads_and_refuses_every_write() {
    let Some(cluster) = memlineage_pgtest::shared() else {
        return;
    };
    let url = cluster.database();
    let location = StoreLocation::Postgres(url.clone());
    // A database with no store cannot be opened read-only (nor is a schema created in it).
    let err = location.open(OpenMode::ReadOnly).err().unwrap();
    assert!(
        matches!(err, Error::State(StoreState::Missing { .. })),
        "{err:?}"
    );
    let writer = setup_with(location.open(OpenMode::Create).unwrap());
    writer
        .write(WriteRequest::new(
            &p("agent"),
            EntryKind::Observation,
            "first",
        ))
        .unwrap();
    writer.checkpoint().unwrap();

    let store = location.open(OpenMode::ReadOnly).unwrap();
    assert!(store.read_only());
    let reader = Memory::open(store).unwrap();
    let size = reader.size().unwrap();
    assert_eq!(size, writer.size().unwrap());
    assert!(reader.latest_checkpoint().unwrap().is_some());

    // Both writes are refused, even with the operator's key in the handle.
    reader.keys().insert(&p("operator"), key(1));
    let err = reader.checkpoint().unwrap_err();
    assert!(
        matches!(err, Error::State(StoreState::ReadOnly { .. })),
        "{err:?}"
    );
    reader.keys().insert(&p("agent"), key(2));
    let err = reader
        .write(WriteRequest::new(&p("agent"), EntryKind::Observation, "no"))
        .unwrap_err();
    assert!(
        matches!(err, Error::State(StoreState::ReadOnly { .. })),
        "{err:?}"
    );
    assert_eq!(writer.size().unwrap(), size, "nothing was written");

    // It follows the log as the writer appends.
    writer
        .write(WriteRequest::new(
            &p("agent"),
            EntryKind::Observation,
            "second",
        ))
        .unwrap();
    assert_eq!(reader.size().unwrap(), size + 1);

    // The server refuses writes on the read-only sessions too.
    let mut config: postgres::Config = url.parse().unwrap();
    config.options("-c default_transaction_read_only=on");
    let mut client = config.connect(postgres::NoTls).unwrap();
    let err = client.batch_execute("DELETE FROM checkpoints").unwrap_err();
    assert_eq!(
        err.code(),
        Some(&postgres::error::SqlState::READ_ONLY_SQL_TRANSACTION),
        "{err:?}"
    );
}
