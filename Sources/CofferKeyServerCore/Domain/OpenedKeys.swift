#if Server
import Coffer
import Foundation

/// Keys opened recently, so that a subject's repeated fetches skip the
/// KEK's AEAD, the context and the key id (a few microseconds of a key
/// fetch's hundred).
///
/// An entry is a memo of a pure function — (name, version, wrapped bytes)
/// under this KEK gives this key — so it cannot release what the database
/// refuses: whether a key may be released (shredded, retired, a replayed
/// proof) is decided from the database before a key is opened, a rotated
/// key has another version and a rewrapped row other bytes, and either
/// misses. What the memo changes is how long an opened key stays in this
/// process's memory: at most ``lifetime`` seconds, far inside a shred's
/// undo window, and the process holds the KEK that opens every row
/// anyway. The memo is emptied when full and when the KEK ring is read
/// again.
final class OpenedKeys: Sendable {
    struct Entry: Hashable {
        let name: KeyName
        let version: Int
        let wrapped: Data
    }

    static let lifetime: Int64 = 60
    static let capacity = 10_000
    let entries = Locked<[Entry: (key: ReleasedKey, until: Int64)]>([:])

    func find(_ name: KeyName, _ row: StoredVersion, now: Int64) -> ReleasedKey? {
        let entry = Entry(name: name, version: row.version, wrapped: row.wrapped)
        return entries.withLock { entries in
            guard let found = entries[entry] else { return nil }
            guard now < found.until else {
                entries[entry] = nil
                return nil
            }
            return found.key
        }
    }

    func keep(_ key: ReleasedKey, _ row: StoredVersion, now: Int64) {
        let entry = Entry(name: key.name, version: row.version, wrapped: row.wrapped)
        entries.withLock { entries in
            if entries.count >= Self.capacity { entries.removeAll(keepingCapacity: true) }
            entries[entry] = (key, now + Self.lifetime)
        }
    }

    func clear() { entries.withLock { $0.removeAll() } }

    var count: Int { entries.withLock { $0.count } }
}
#endif
