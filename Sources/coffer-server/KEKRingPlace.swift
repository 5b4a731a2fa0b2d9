#if Server
import ArgumentParser
import Coffer
import CofferKeyServerCore
import Foundation

/// Where the KEK ring is kept: `DIR/kek.ckr`, copied to each replica by
/// hand, or the database every replica shares (`kek init
/// --ring-in-database`, `kek move-to-database`), where a rotation on one
/// replica reaches the others by itself.
enum ServerKEKRing: Sendable {
    case file(KeyRingStore)
    case database(KEKRingRow)

    /// For messages: the file's path, or "the database".
    var place: String {
        switch self {
        case .file(let store): store.path
        case .database: "the database"
        }
    }

    func read() async throws -> KeyRingFile {
        switch self {
        case .file(let store): try await store.read()
        case .database(let row): try await row.read()
        }
    }

    @discardableResult
    func modify<T: Sendable>(_ change: @escaping @Sendable (inout KeyRingFile) throws -> T) async throws -> T {
        switch self {
        case .file(let store): try await store.modify(change)
        case .database(let row): try await row.modify(change)
        }
    }

    /// The same place, unlocked by `secret` instead (`kek reseal`).
    func unlocked(by secret: UnlockSecret) -> ServerKEKRing {
        switch self {
        case .file(let store): .file(KeyRingStore(path: store.path, secret: secret, rollbackGuard: store.rollbackGuard))
        case .database(let row):
            .database(KEKRingRow(store: row.store, secret: secret, rollbackGuard: row.rollbackGuard))
        }
    }

    func acceptCurrentGeneration() async throws -> UInt64 {
        switch self {
        case .file(let store): try await BlockingWork.run { try store.acceptCurrentGeneration() }
        case .database(let row): try await row.acceptCurrentGeneration()
        }
    }
}

extension DataOptions {
    /// ``openDatabase(_:creating:)``; when it finds no database and there
    /// is no ring file at `ring` either, the error says there is no ring
    /// (nothing at all is there: a misspelling, or `kek init` not run).
    func openDatabase(_ settings: ServerSettings, creating: Bool, ring: String) async throws -> ServerKeyStore {
        do {
            return try await openDatabase(settings, creating: creating)
        } catch let error as CofferError
            where error.code == .refused && !creating && !FileManager.default.fileExists(atPath: ring)
        {
            throw ValidationError(Self.noRing(ring))
        }
    }

    /// The KEK ring, where it is kept, and the key store opened under it
    /// (reading the ring again every 30 seconds and when a row names a KEK
    /// key it lacks: the file unlocked again only when it changed, the
    /// database's row likewise). Only `kek init` (and `serve --dev`)
    /// passes `creating`: every other command refuses a missing KEK ring
    /// or database, so that a misspelt setting is an error, not a new KEK
    /// (operator trial 4: a replica with `"databse"` made one and served
    /// other key bytes under the same key id). A new ring goes into the
    /// database when `ringInDatabase`, else into `DIR/kek.ckr`.
    func openWithRing(_ settings: ServerSettings, creating: Bool = false, ringInDatabase: Bool = false)
        async throws -> (store: ServerKeyStore, ring: ServerKEKRing)
    {
        let directory = try settings.required(self.directory, "data", flag: "--data")
        if creating {
            try FileManager.default.createDirectory(
                atPath: directory, withIntermediateDirectories: true, attributes: [.posixPermissions: 0o700])
        }
        let file = try kekRingFile(settings, creating: creating)
        let store = try await openDatabase(settings, creating: creating, ring: file.path)
        do {
            let place = try await locate(file, store, creating: creating, ringInDatabase: ringInDatabase)
            switch place {
            case .file(let ring):
                let reader = KeyRingReader(ring)
                let exists = FileManager.default.fileExists(atPath: ring.path)
                let opened = try await BlockingWork.run { exists ? try reader.read() : try reader.create() }
                store.useKEK(opened.keyRing, reload: { try await BlockingWork.run { try reader.read().keyRing } })
            case .database(let row):
                let opened: KeyRingFile
                if try await row.exists() {
                    opened = try await row.read()
                } else {
                    opened = try await BlockingWork.run { try KeyRingFile(keyRing: KeyRing(), secret: row.secret) }
                    try await row.create(opened)
                }
                store.useKEK(opened.keyRing, reload: { try await row.read().keyRing })
            }
            return (store, place)
        } catch {
            await store.close()
            throw error
        }
    }

    /// `body` with the store and the ring (``openWithRing(_:creating:ringInDatabase:)``);
    /// the store is closed afterwards.
    func withRing<T>(_ settings: ServerSettings, _ body: (ServerKeyStore, ServerKEKRing) async throws -> T)
        async throws -> T
    {
        let (store, ring) = try await openWithRing(settings)
        do {
            let result = try await body(store, ring)
            await store.close()
            return result
        } catch {
            await store.close()
            throw error
        }
    }

    /// Where the ring is, without reading it (for commands that must work
    /// on a ring the server would refuse: `accept-restore`, `reseal`); the
    /// store has no KEK. The caller closes the store.
    func locateRing(_ settings: ServerSettings) async throws -> (store: ServerKeyStore, ring: ServerKEKRing) {
        let file = try kekRingFile(settings)
        let store = try await openDatabase(settings, creating: false, ring: file.path)
        do {
            return (store, try await locate(file, store, creating: false, ringInDatabase: false))
        } catch {
            await store.close()
            throw error
        }
    }

    /// The database's ring when it keeps one (a `DIR/kek.ckr` beside it
    /// is refused: one of the two is stale), else the file; with neither,
    /// where `creating` makes one, or an error.
    func locate(_ file: KeyRingStore, _ store: ServerKeyStore, creating: Bool, ringInDatabase: Bool) async throws
        -> ServerKEKRing
    {
        let row = KEKRingRow(store: store, secret: file.secret, rollbackGuard: file.rollbackGuard)
        let inDatabase = try await row.exists()
        let fileExists = FileManager.default.fileExists(atPath: file.path)
        switch (inDatabase, fileExists) {
        case (true, true):
            throw ValidationError(
                "the database keeps the KEK ring, and there is also one at \(file.path): the database's is the one every replica reads; move \(file.path) out of the way (kek move-to-database left it, or it is a stale copy)"
            )
        case (true, false): return .database(row)
        case (false, true):
            guard !(creating && ringInDatabase) else {
                throw ValidationError(
                    "there is a KEK ring at \(file.path) already: coffer-server kek move-to-database moves it into the database"
                )
            }
            return .file(file)
        case (false, false):
            guard creating else {
                throw ValidationError(DataOptions.noRing(file.path))
            }
            return ringInDatabase ? .database(row) : .file(file)
        }
    }
}
#endif
