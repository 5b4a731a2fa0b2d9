import Coffer
import Foundation

/// One transaction inside the store: its connection and the store's state
/// as of its start, as one value. `RecordStore.read` and `write` hand it
/// to their bodies, ``StoreTransaction`` holds one, and the internal verbs
/// (put, get, find, fetch, update, delete, the token search) take it,
/// never the connection and the state loose: a state can only be used
/// with the connection of the transaction it was read in.
struct StoreWork {
    let db: any StoreConnection
    let state: StoreState
    /// What a write transaction changed in each table's record set, added
    /// to the digest before it commits; nil in a read.
    var changes: RecordSetChanges? = nil
}
