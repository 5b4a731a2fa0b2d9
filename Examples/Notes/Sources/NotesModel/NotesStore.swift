import Coffer
import CofferKeyClient
import CofferStore
import Foundation

/// The notes of one user, in one SQLite file.
///
/// ```swift
/// let notes = try await NotesStore.open(at: url, password: typed)
/// try await notes.add(Note(title: "Shopping", body: "milk, eggs", tag: "Home"))
/// for try await list in notes.newestFirst() { model.notes = list }
/// ```
public final class NotesStore: Sendable {
    public let store: RecordStore

    init(_ store: RecordStore) { self.store = store }

    /// Opens the notes at `url` with the user's password, making the file
    /// the first time; a store that does not keep `Note` as it is declared
    /// is refused, naming the field.
    public static func open(
        at url: URL, password: String, kdf: PasswordKDF = .defaultScrypt,
        rollbackGuard: (any RollbackGuard)? = RecordStore.defaultRollbackGuard
    ) async throws -> NotesStore {
        NotesStore(
            try await RecordStore.open(
                orCreate: url.path, records: [Note.self], secret: .password(password), kdf: kdf,
                rollbackGuard: rollbackGuard))
    }

    /// Opens the notes with a recovery key's text (the password forgotten).
    public static func open(at url: URL, recoveryKey: String, rollbackGuard: (any RollbackGuard)?) throws
        -> NotesStore
    {
        NotesStore(
            try RecordStore.open(
                sqlite: url.path, secret: try .recoveryKey(recoveryKey), records: [Note.self],
                rollbackGuard: rollbackGuard))
    }

    /// Opens the notes with the signed-in user's key from the key server:
    /// the current version, else an older one, and then the store moves to
    /// the current version, so the operator can retire the older one.
    public static func open(
        at url: URL, keys: KeyServerClient, rollbackGuard: (any RollbackGuard)? = RecordStore.defaultRollbackGuard
    ) async throws -> NotesStore {
        let opened = try await keys.unlock(purpose: "notes") { secret in
            try RecordStore.open(orCreate: url.path, records: [Note.self], secret: secret, rollbackGuard: rollbackGuard)
        } moving: { store, older, current in
            try store.replaceSlot(openedBy: older, with: current)
        }
        return NotesStore(opened.value)
    }

    @discardableResult
    public func add(_ note: Note) async throws -> Note { try await store.put(note) }

    public func delete(_ note: Note) async throws { try await store.delete(note) }

    /// Newest first; notes of the same millisecond newest-added first.
    public static let newest = Note.query.order(by: Note.CodingKeys.createdAt, descending: true)
        .order(by: Note.CodingKeys.id, descending: true)

    /// The list screen: newest first, now and after every change by anyone.
    public func newestFirst() -> StoreObservation<[Note]> { store.observe(Note.self, Self.newest) }

    /// Notes made at or after `date`, newest first.
    public func since(_ date: Date) async throws -> [Note] {
        try await store.fetchAll(Note.self, Self.newest.filter(StoreColumn(Note.CodingKeys.createdAt) >= .date(date)))
    }

    /// Notes whose title holds `text`, ASCII case ignored.
    public func titled(containing text: String) async throws -> [Note] {
        try await store.fetchAll(
            Note.self, Self.newest.filter(StoreColumn(Note.CodingKeys.title).contains(text, ignoringCase: true)))
    }

    /// Notes whose title begins with `prefix`, exactly.
    public func titled(startingWith prefix: String) async throws -> [Note] {
        try await store.fetchAll(Note.self, Self.newest.filter(StoreColumn(Note.CodingKeys.title).hasPrefix(prefix)))
    }

    /// Notes with one of `titles`.
    public func titled(oneOf titles: [String]) async throws -> [Note] {
        try await store.fetchAll(
            Note.self, Self.newest.filter(StoreColumn(Note.CodingKeys.title).in(titles.map { .text($0) })))
    }

    /// Notes tagged `tag` (case and spaces folded), through the blind index.
    public func tagged(_ tag: String) async throws -> [Note] {
        try await store.fetchAll(Note.self, Self.newest.filter(Note.CodingKeys.tag, equals: .text(tag)))
    }

    public func changePassword(to password: String, kdf: PasswordKDF = .defaultScrypt) async throws {
        try await store.changeSecret(to: .password(password), kdf: kdf)
    }

    /// A new recovery key, to show the user once.
    public func makeRecoveryKey() async throws -> String { try await store.addRecoveryKey().text }

    public func close() throws { try store.close() }
}
