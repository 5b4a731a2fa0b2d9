import Coffer
import CofferKeyClient
import CofferStore
import Foundation

/// The app's presents, in one SQLite file. Each description is sealed
/// (AES-256-GCM-SIV under the store's key ring, bound to its row and to
/// whom it is for), so the file, a backup of it or a lost phone's disk
/// shows who gets a present but never what.
///
/// ```swift
/// let presents = try await PresentsStore.open(at: url, unlock: .password(typed))
/// try await presents.add(toWhom: "Grandma", description: "a knitted scarf")
/// let list = try await presents.all()               // the list screen, ordered by recipient
/// let hers = try await presents.presents(for: "Grandma")
/// ```
public final class PresentsStore: Sendable {
    /// How the store is unlocked: the user's password (the seed's first
    /// app), or the key a key server gives the signed-in user (its second).
    public enum Unlock: Sendable {
        case password(String)
        case server(KeyServerClient, purpose: String = "presents")
    }

    /// What is clear and what is sealed: the schema, not the type, says it.
    public static let schema: StoreSchema = {
        // A literal schema that passes validation; a failure here is a programming error.
        try! StoreSchema(tables: [
            .init(
                name: Present.storeTable, primaryKey: "id",
                fields: [
                    .init(name: "id", type: .integer),
                    .init(name: "toWhom", type: .text),
                    .init(name: "description", type: .text, sealed: true, bind: ["toWhom"]),
                ])
        ])
    }()

    let store: RecordStore

    init(_ store: RecordStore) { self.store = store }

    /// Opens the presents at `url`, making the file on first use. A wrong
    /// password is `CofferError` `.wrongPassword`; the key derivation runs
    /// off the caller's thread. With the key server's key, the current
    /// version is tried first, then older ones; a store an older version
    /// opened moves to the current one (its key slot rewrapped, no present
    /// rewritten), so the server's operator can retire the older version
    /// once every device has opened.
    /// `kdf`: how a password is stretched when the file is made (scrypt,
    /// about a second on a phone); `rollbackGuard`: where the newest state
    /// seen is kept, so that an older copy of the file put back is refused.
    public static func open(
        at url: URL, unlock: Unlock, kdf: PasswordKDF = .defaultScrypt,
        rollbackGuard: (any RollbackGuard)? = StateFileRollbackGuard.user
    ) async throws -> PresentsStore {
        switch unlock {
        case .password(let password):
            return PresentsStore(
                try await RecordStore.open(
                    orCreate: url.path, schema: schema, secret: .password(password), kdf: kdf,
                    rollbackGuard: rollbackGuard))
        case .server(let client, let purpose):
            // A key has no KDF to keep off this thread: the synchronous open is quick.
            let opened = try await client.unlock(purpose: purpose) { secret in
                try RecordStore.open(orCreate: url.path, schema: schema, secret: secret, rollbackGuard: rollbackGuard)
            } moving: { store, older, current in
                try store.replaceSlot(openedBy: older, with: current)
            }
            return PresentsStore(opened.value)
        }
    }

    /// Changes the password (the store is locked with the new one alone).
    public func changePassword(to password: String, kdf: PasswordKDF = .defaultScrypt) async throws {
        try await store.changeSecret(to: .password(password), kdf: kdf)
    }

    /// Closes the store (before its file is deleted at sign-out).
    public func close() throws { try store.close() }

    /// Adds a present and returns it with the id the store gave it.
    @discardableResult
    public func add(toWhom: String, description: String) async throws -> Present {
        try await store.put(Present(toWhom: toWhom, description: description))
    }

    /// Every present, by recipient and then in the order they were added.
    public func all() async throws -> [Present] {
        try await store.fetchAll(Present.self, Present.query.order(by: "toWhom").order(by: "id"))
    }

    /// Every present as ``all()`` orders them, now and after every change
    /// to them, by this app or another process on the same file (a share
    /// extension, a widget): what the list screen shows.
    public func changes() -> StoreObservation<[Present]> {
        store.observe(Present.self, Present.query.order(by: "toWhom").order(by: "id"))
    }

    /// The presents for one person, found by the database without opening any.
    public func presents(for toWhom: String) async throws -> [Present] {
        try await store.fetchAll(Present.self, Present.query.filter("toWhom", equals: .text(toWhom)).order(by: "id"))
    }

    public func count() async throws -> Int { try await store.fetchCount(Present.self) }

    /// Changes a present (both fields are written again); false when
    /// there is none with its id.
    @discardableResult
    public func update(_ present: Present) async throws -> Bool {
        try await store.update(present)
    }

    /// Removes a present; false when there was none with that id.
    @discardableResult
    public func remove(id: Int64) async throws -> Bool {
        try await store.delete(Present.self, id: .integer(id))
    }

    /// Removes a present; false when it was already gone.
    @discardableResult
    public func remove(_ present: Present) async throws -> Bool {
        try await store.delete(present)
    }

    /// A present as it may go to a log: who it is for, never what.
    public func logLine(_ present: Present) -> String { store.schema.description(of: present) }
}
