#if Server
import Coffer
import CofferStore
import CofferStorePostgres
import Foundation
import Testing

#if canImport(Glibc)
import Glibc
#endif

/// The store reaches PostgreSQL over TLS checked as libpq checks it
/// (security review 3, G2): `sslmode` and `sslrootcert` in the URL, and
/// verify-full by default off loopback. scripts/with-postgres starts the
/// cluster with ssl=on and a certificate for `localhost` only, signed by a
/// CA it makes; a second CA stands for the wrong one.
@Suite(.serialized) struct PostgresTLSTests {
    struct Cluster {
        let port: String
        let ca: String
        let otherCA: String
        let password: String
    }

    static let cluster: Cluster? = {
        let environment = ProcessInfo.processInfo.environment
        guard let port = environment["COFFER_TEST_POSTGRES_PORT"], let ca = environment["COFFER_TEST_POSTGRES_CA"],
            let other = environment["COFFER_TEST_POSTGRES_OTHER_CA"],
            let file = environment["COFFER_TEST_POSTGRES_PASSWORD_FILE"],
            let password = try? String(contentsOfFile: file, encoding: .utf8)
        else { return nil }
        return Cluster(port: port, ca: ca, otherCA: other, password: password)
    }()

    static var available: Bool { PostgresStoreTests.available && cluster != nil }

    static func schema() throws -> StoreSchema {
        try StoreSchema(tables: [
            .init(
                name: "notes", primaryKey: "id",
                fields: [.init(name: "id", type: .integer), .init(name: "body", type: .text, sealed: true)])
        ])
    }

    static func create(host: String, _ query: String, namespace: String) throws -> RecordStore {
        let cluster = try #require(Self.cluster)
        return try RecordStore.create(
            postgres: "postgres://coffer@\(host):\(cluster.port)/coffer?schema=\(namespace)&\(query)",
            password: cluster.password, schema: try schema(), secret: RecordStoreTests.passphrase,
            kdf: RecordStoreTests.fast)
    }

    /// The message of the error `body` throws, or nil when it throws none.
    static func failure(_ body: () throws -> Void) -> String? {
        do {
            try body()
            return nil
        } catch { return "\(error)" }
    }

    @Test func urlsAreReadAsLibpqReadsThem() throws {
        #expect(try PostgresURL("postgres://u@db.example.com/d", what: "x").sslMode == .verifyFull)
        #expect(try PostgresURL("postgres://u@10.0.0.7:5433/d", what: "x").sslMode == .verifyFull)
        for local in ["localhost", "127.0.0.1", "127.8.9.10", "[::1]"] {
            #expect(try PostgresURL("postgres://u@\(local)/d", what: "x").sslMode == .prefer, "\(local)")
        }
        let url = try PostgresURL(
            "postgres://u@db/d?schema=s&sslmode=verify-ca&sslrootcert=/etc/ca.pem", what: "x")
        #expect(url.sslMode == .verifyCA && url.sslRootCert == "/etc/ca.pem" && url.schema == "s")
        #expect(try PostgresURL("postgres://u@db/d?sslmode=disable", what: "x").sslMode == .disable)
        for bad in [
            "postgres://u@db/d?sslmode=allow", "postgres://u@db/d?sslmode=VERIFY", "postgres://u@db/d?ssl=true",
        ] {
            #expect(throws: CofferError(.invalidArgument, "")) { try PostgresURL(bad, what: "x") }
        }
    }

    @Test(.enabled(if: available)) func verifyFullWithTheRightCAAndHost() throws {
        let cluster = try #require(Self.cluster)
        let store = try Self.create(
            host: "localhost", "sslmode=verify-full&sslrootcert=\(cluster.ca)", namespace: "tls_ok")
        let id = try store.put(["body": .text("over TLS")], into: "notes")
        #expect(try store.get("notes", id: id)?["body"] == .text("over TLS"))
        // verify-ca does not look at the name: 127.0.0.1 is accepted there.
        let byAddress = try Self.create(
            host: "127.0.0.1", "sslmode=verify-ca&sslrootcert=\(cluster.ca)", namespace: "tls_ca")
        #expect(try byAddress.put(["body": .text("x")], into: "notes") == .integer(1))
    }

    /// A certificate from another CA, and one that names localhost reached
    /// as 127.0.0.1, are both refused under verify-full.
    @Test(.enabled(if: available), arguments: [("localhost", true), ("127.0.0.1", false)])
    func aCertificateFromAnotherCAOrForAnotherHostIsRefused(host: String, otherCA: Bool) throws {
        let cluster = try #require(Self.cluster)
        let message = Self.failure {
            _ = try Self.create(
                host: host, "sslmode=verify-full&sslrootcert=\(otherCA ? cluster.otherCA : cluster.ca)",
                namespace: otherCA ? "tls_wrong_ca" : "tls_wrong_host")
        }
        #expect(message?.contains("certificate was refused") == true, "\(message ?? "accepted")")
    }

    /// A server that answers the SSLRequest with "N" (no TLS), a stand-in
    /// on a socket of this test: `require` refuses to go on in the clear,
    /// and the password is never sent.
    @Test func requireRefusesAServerWithoutTLS() throws {
        let listener = socket(AF_INET, Int32(SOCK_STREAM.rawValue), 0)
        defer { close(listener) }
        var address = sockaddr_in()
        address.sin_family = sa_family_t(AF_INET)
        address.sin_addr.s_addr = inet_addr("127.0.0.1")
        var length = socklen_t(MemoryLayout<sockaddr_in>.size)
        let bound = withUnsafeMutablePointer(to: &address) {
            $0.withMemoryRebound(to: sockaddr.self, capacity: 1) {
                bind(listener, $0, length) == 0 && listen(listener, 4) == 0 && getsockname(listener, $0, &length) == 0
            }
        }
        try #require(bound)
        let port = UInt16(bigEndian: address.sin_port)
        let received = Locked<[UInt8]>([])
        let server = Thread {
            let connection = accept(listener, nil, nil)
            guard connection >= 0 else { return }
            defer { close(connection) }
            var buffer = [UInt8](repeating: 0, count: 512)
            let count = read(connection, &buffer, 8)
            if count > 0 { received.withLock { $0 += buffer[..<count] } }
            _ = write(connection, [UInt8(ascii: "N")], 1)
            // Anything sent after "N" would be the startup message in the clear.
            let more = read(connection, &buffer, buffer.count)
            if more > 0 { received.withLock { $0 += buffer[..<more] } }
        }
        server.start()
        let message = Self.failure {
            _ = try RecordStore.open(
                postgres: "postgres://app@127.0.0.1:\(port)/appdb?sslmode=require", password: "not-to-be-sent",
                secret: RecordStoreTests.passphrase, rollbackGuard: nil)
        }
        #expect(message?.contains("does not offer TLS") == true, "\(message ?? "accepted")")
        let bytes = received.withLock { $0 }
        // The SSLRequest: length 8, code 80877103.
        #expect(Array(bytes.prefix(8)) == [0, 0, 0, 8, 0x04, 0xD2, 0x16, 0x2F])
        #expect(bytes.count == 8, "the client sent more after the server said no TLS")
    }
}
#endif
