import Coffer
import Foundation

#if canImport(Glibc)
import Glibc
#elseif canImport(Darwin)
import Darwin
#endif

extension RecordStore {
    /// Opens the store at `path`, or makes it with `schema` when there is
    /// no file there: what an app calls at every launch. On Apple
    /// platforms the store's files are given `fileProtection` at each open
    /// (``StoreFileProtection``; nothing elsewhere).
    ///
    /// ```swift
    /// let store = try RecordStore.open(orCreate: url.path, schema: schema, secret: .password(typed))
    /// ```
    ///
    /// Two processes doing this at once make one store: the one that loses
    /// the race to create the file opens the other's once its first
    /// transaction has committed. `kdf` is the new store's password KDF
    /// (an existing store keeps its own). An existing store keeps the
    /// schema its migrations made; `schema` is not compared with it.
    public static func open(
        orCreate path: String, schema: StoreSchema, secret: UnlockSecret, kdf: PasswordKDF = .defaultScrypt,
        rollbackGuard: (any RollbackGuard)? = RecordStore.defaultRollbackGuard,
        fileProtection: StoreFileProtection = .completeUntilFirstUserAuthentication
    ) throws -> RecordStore {
        let store = try openOrCreate(path, schema: schema, secret: secret, kdf: kdf, rollbackGuard: rollbackGuard)
        do { try protect(path, fileProtection) } catch {
            try? store.close()
            throw error
        }
        return store
    }

    static func openOrCreate(
        _ path: String, schema: StoreSchema, secret: UnlockSecret, kdf: PasswordKDF,
        rollbackGuard: (any RollbackGuard)?
    ) throws -> RecordStore {
        if !FileManager.default.fileExists(atPath: path) {
            do {
                return try create(sqlite: path, schema: schema, secret: secret, kdf: kdf, rollbackGuard: rollbackGuard)
            } catch let error as CofferError
                where error.code == .refused && FileManager.default.fileExists(atPath: path)
            {
                // Another process made the file first: open what it makes.
            }
        }
        // A file made a moment ago by another process may not hold its
        // tables yet (they commit in its first transaction): wait for them
        // a little, never for a file that stays without them.
        let deadline = Date().addingTimeInterval(2)
        while true {
            do {
                return try open(sqlite: path, secret: secret, rollbackGuard: rollbackGuard)
            } catch let error as CofferError where error.code == .malformed && Date() < deadline {
                usleep(20_000)
            }
        }
    }

    /// Opens the store at `path`, refusing it unless it keeps every one of
    /// `records` as the type declares itself (``SchemaRecord``): the error
    /// names the type, the field and how they differ.
    public static func open(
        sqlite path: String, secret: UnlockSecret, records: [any SchemaRecord.Type],
        rollbackGuard: (any RollbackGuard)? = RecordStore.defaultRollbackGuard
    ) throws -> RecordStore {
        try checked(try open(sqlite: path, secret: secret, rollbackGuard: rollbackGuard), records)
    }

    /// Opens the store at `path`, or makes it with the record types'
    /// tables; either way refused unless it keeps every type as declared.
    public static func open(
        orCreate path: String, records: [any SchemaRecord.Type], secret: UnlockSecret,
        kdf: PasswordKDF = .defaultScrypt, rollbackGuard: (any RollbackGuard)? = RecordStore.defaultRollbackGuard,
        fileProtection: StoreFileProtection = .completeUntilFirstUserAuthentication
    ) throws -> RecordStore {
        let schema = try StoreSchema(records: records)
        return try checked(
            try open(
                orCreate: path, schema: schema, secret: secret, kdf: kdf, rollbackGuard: rollbackGuard,
                fileProtection: fileProtection), records)
    }

    static func checked(_ store: RecordStore, _ records: [any SchemaRecord.Type]) throws -> RecordStore {
        do { try store.schema.check(records) } catch {
            try? store.close()
            throw error
        }
        return store
    }

    /// Deletes the stored record with `record`'s primary key; false when
    /// there was none. A record without one (never put) is `invalidArgument`.
    @discardableResult
    public func delete<R: SealedRecord>(_ record: R) throws -> Bool {
        let table = try schema.table(R.storeTable)
        guard let key = try record.storeRecord()[table.primaryKey], key != .null else {
            throw CofferError(
                .invalidArgument, "this \(R.self) has no primary key \(table.primaryKey): it was never put")
        }
        return try delete(R.storeTable, id: key)
    }
}

extension RecordStore {
    /// ``open(orCreate:schema:secret:kdf:rollbackGuard:fileProtection:)`` on a
    /// Dispatch thread: the password KDF never runs on the caller's.
    public static func open(
        orCreate path: String, schema: StoreSchema, secret: UnlockSecret, kdf: PasswordKDF = .defaultScrypt,
        rollbackGuard: (any RollbackGuard)? = RecordStore.defaultRollbackGuard,
        fileProtection: StoreFileProtection = .completeUntilFirstUserAuthentication
    ) async throws -> RecordStore {
        try await BlockingWork.run {
            try open(
                orCreate: path, schema: schema, secret: secret, kdf: kdf, rollbackGuard: rollbackGuard,
                fileProtection: fileProtection)
        }
    }

    /// ``open(orCreate:records:secret:kdf:rollbackGuard:fileProtection:)`` on a Dispatch thread.
    ///
    /// ```swift
    /// let store = try await RecordStore.open(orCreate: path, records: [Note.self], secret: .password(typed))
    /// ```
    public static func open(
        orCreate path: String, records: [any SchemaRecord.Type], secret: UnlockSecret,
        kdf: PasswordKDF = .defaultScrypt, rollbackGuard: (any RollbackGuard)? = RecordStore.defaultRollbackGuard,
        fileProtection: StoreFileProtection = .completeUntilFirstUserAuthentication
    ) async throws -> RecordStore {
        try await BlockingWork.run {
            try open(
                orCreate: path, records: records, secret: secret, kdf: kdf, rollbackGuard: rollbackGuard,
                fileProtection: fileProtection)
        }
    }

    @discardableResult
    public func delete<R: SealedRecord>(_ record: R) async throws -> Bool {
        try await BlockingWork.run { try self.delete(record) }
    }
}
