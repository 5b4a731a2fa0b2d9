#if Server
import Coffer
import Crypto
import Foundation
import Testing

@testable import CofferKeyServer
@testable import CofferKeyServerCore

/// A stored key naming a KEK key the ring in memory lacks makes the store
/// read its ring again (another process rotated the KEK). A ring that
/// still lacks it is not read again for every request: a replica given
/// the wrong KEK would otherwise run scrypt per request.
@Suite struct KEKReloadTests {
    /// A store over the keys another KEK wrote, whose ring readings are
    /// counted and give `served`, on a clock the test moves.
    struct Replica {
        let store: ServerKeyStore
        let served: Locked<KeyRing>
        let readings = Locked(0)
        let clock = Locked<Int64>(1_800_000_000)

        /// `holding`: the ring it starts with (by default, one that holds
        /// none of the database's KEK keys).
        init(path: String, serving ring: KeyRing, holding: KeyRing = KeyRing()) throws {
            let (served, readings, clock) = (Locked(ring), readings, clock)
            self.served = served
            store = try ServerKeyStore(
                path: path, kek: holding,
                reload: {
                    readings.withLock { $0 += 1 }
                    return served.withLock { $0 }
                }, now: { clock.withLock { $0 } })
        }

        var count: Int { readings.withLock { $0 } }
        func wait(_ seconds: Int64) { clock.withLock { $0 += seconds } }

        /// The problem code of fetching `name`'s current key, or nil when it opened.
        func fetch(_ name: KeyName) async -> String? {
            do {
                _ = try await store.current(name)
                return nil
            } catch {
                return (error as? KeyServerError)?.code.name ?? "\(error)"
            }
        }
    }

    static func bytes(_ key: SymmetricKey) -> Data { key.withUnsafeBytes { Data($0) } }

    /// A new folder, which the caller removes, and the path of a database in it.
    static func database() throws -> (folder: URL, path: String) {
        let folder = FileManager.default.temporaryDirectory.appendingPathComponent("coffer-reload-\(UUID().uuidString)")
        try FileManager.default.createDirectory(at: folder, withIntermediateDirectories: true)
        return (folder, folder.appendingPathComponent("keys.sqlite").path)
    }

    @Test func aKEKKeyAReadingLackedIsLookedForAgainOnlyAfterAWhileOrANewReading() async throws {
        let (folder, path) = try Self.database()
        defer { try? FileManager.default.removeItem(at: folder) }
        let databases = KeyRing()
        let name = try KeyName(realm: "default", subject: "ana", purpose: "notes")
        let made = try await ServerKeyStore(path: path, kek: databases).current(name)

        // A replica whose ring, read again, still lacks the database's KEK.
        let replica = try Replica(path: path, serving: KeyRing())
        for _ in 0..<5 { #expect(await replica.fetch(name) == "key-unreadable") }
        #expect(replica.count == 1)
        replica.wait(Self.absentFor - 1)
        #expect(await replica.fetch(name) == "key-unreadable")
        #expect(replica.count == 1)
        replica.wait(1)
        #expect(await replica.fetch(name) == "key-unreadable")
        #expect(replica.count == 2)

        // The ring file is mended; within the wait the id is not looked for,
        // and the next reading for any reason (the server's every 30 s) finds it.
        replica.served.withLock { $0 = databases }
        #expect(await replica.fetch(name) == "key-unreadable")
        #expect(replica.count == 2)
        try await replica.store.reloadKEK()
        #expect(replica.count == 3)
        let opened = try await replica.store.current(name)
        #expect(Self.bytes(opened.key) == Self.bytes(made.key))
        #expect(replica.count == 3)
    }

    /// A second KEK rotation right after a first: a row under a KEK key no
    /// reading has lacked yet is looked for at once, whatever else is absent.
    /// (Every ring holds the key the first server sealed the audit link
    /// key under, as every ring of one database does.)
    @Test func aNewKEKKeyIsLookedForAtOnce() async throws {
        let (folder, path) = try Self.database()
        defer { try? FileManager.default.removeItem(at: folder) }
        let base = KeyRing()
        var (first, second) = (base, base)
        _ = try (first.rotate(), second.rotate())
        _ = try await ServerKeyStore(path: path, kek: base).current(
            try KeyName(realm: "default", subject: "seed", purpose: "notes"))
        let lost = try KeyName(realm: "default", subject: "ana", purpose: "notes")
        _ = try await ServerKeyStore(path: path, kek: first).current(lost)
        let fresh = try KeyName(realm: "default", subject: "bo", purpose: "notes")
        let made = try await ServerKeyStore(path: path, kek: second).current(fresh)

        let replica = try Replica(path: path, serving: base, holding: base)
        #expect(await replica.fetch(lost) == "key-unreadable")
        #expect(replica.count == 1)
        replica.served.withLock { $0 = second }
        let opened = try await replica.store.current(fresh)
        #expect(Self.bytes(opened.key) == Self.bytes(made.key))
        #expect(replica.count == 2)
        // That reading forgot what the one before lacked: `lost` is looked for once more.
        #expect(await replica.fetch(lost) == "key-unreadable")
        #expect(replica.count == 3)
        #expect(await replica.fetch(lost) == "key-unreadable")
        #expect(replica.count == 3)
    }

    static var absentFor: Int64 { ServerKeyStore.absentFor }
}
#endif
