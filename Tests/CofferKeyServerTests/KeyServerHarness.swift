#if Server
import Coffer
import CofferKeyServer
import CofferKeyServerCore
import Foundation
import HTTPTypes
import Hummingbird
import HummingbirdTesting
import Testing

/// An issuer made by an independent implementation (scripts/jwt-tool.py:
/// PyJWT and pyca/cryptography) and a key server on loopback trusting it.
struct Issuer {
    static let root = URL(fileURLWithPath: #filePath).deletingLastPathComponent().deletingLastPathComponent()
        .deletingLastPathComponent().path
    static let name = "https://issuer.test"
    static let audience = "coffer-tests"
    let folder: String

    init() throws {
        folder = NSTemporaryDirectory() + "coffer-issuer-\(UUID().uuidString)"
        try FileManager.default.createDirectory(atPath: folder, withIntermediateDirectories: true)
        try Self.python(["keys", folder])
    }

    /// Tokens for `specs` (scripts/jwt-tool.py's spec format).
    func mint(_ specs: [[String: Any]]) throws -> [String] {
        let output = try Self.python(["mint", folder], input: try JSONSerialization.data(withJSONObject: specs))
        return try JSONSerialization.jsonObject(with: output) as! [String]
    }

    /// A valid ES256 token (or of another key) for `subject`, with `extra` claims.
    func token(_ subject: String, key: String = "es", _ extra: [String: Any] = [:]) throws -> String {
        try mint([["key": key, "claims": Self.claims(subject).merging(extra) { $1 }]])[0]
    }

    static func claims(_ subject: String) -> [String: Any] {
        let now = Int(Date().timeIntervalSince1970)
        return ["sub": subject, "iss": name, "aud": audience, "iat": now, "exp": now + 300]
    }

    func rotate() throws { try Self.python(["rotate", folder]) }

    /// DPoP proofs made by PyJWT (scripts/jwt-tool.py proof): each with its key's thumbprint.
    func proofs(_ specs: [[String: Any]]) throws -> [(proof: String, jkt: String)] {
        let output = try Self.python(["proof", folder], input: try JSONSerialization.data(withJSONObject: specs))
        return (try JSONSerialization.jsonObject(with: output) as! [[String: String]]).map {
            ($0["proof"]!, $0["jkt"]!)
        }
    }

    @discardableResult
    static func python(_ arguments: [String], input: Data = Data()) throws -> Data {
        let run = try Spawned.run(root + "/.venv/bin/python", [root + "/scripts/jwt-tool.py"] + arguments, input: input)
        guard run.status == 0 else {
            throw CofferError(.malformed, "jwt-tool.py \(arguments[0]) failed (scripts/test installs PyJWT into .venv)")
        }
        return run.output
    }
}

/// A key server in this process, on a loopback port, over a fresh database.
struct TestServer {
    let issuer: Issuer
    let store: ServerKeyStore
    let server: KeyServer
    /// The SQLite path or the PostgreSQL URL (with a schema of the test's own).
    let database: String
    /// Seconds added to the store's clock (shred windows pass at once).
    let skip = Locked<Int64>(0)

    init(
        issuer: Issuer, kek: KeyRing = KeyRing(), backend: Backend = .sqlite, limits: RateLimits = .none,
        dpop: DPoPPolicy = DPoPPolicy(), clientCacheSeconds: Int64 = 3600
    ) async throws {
        try await self.init(
            issuer: issuer, kek: kek, limits: limits, dpop: dpop,
            database: backend == .sqlite ? issuer.folder + "/keys.sqlite" : try TestPostgres.freshURL(),
            clientCacheSeconds: clientCacheSeconds)
    }

    /// A second server over `other`'s database, with its own KEK ring (and realm).
    init(issuer: Issuer, kek: KeyRing, reopening other: TestServer, realm: String = "default") async throws {
        try await self.init(
            issuer: issuer, kek: kek, limits: .none, dpop: DPoPPolicy(), database: other.database, realm: realm)
    }

    private init(
        issuer: Issuer, kek: KeyRing, limits: RateLimits, dpop: DPoPPolicy, database: String,
        clientCacheSeconds: Int64 = 3600, realm: String = "default"
    ) async throws {
        self.issuer = issuer
        self.database = database
        let skip = self.skip
        let now: @Sendable () -> Int64 = { Int64(Date().timeIntervalSince1970) + skip.withLock { $0 } }
        if database.hasPrefix("postgres") {
            store = try await ServerKeyStore.open(
                postgres: database, password: try TestPostgres.server().password, kek: kek, now: now)
        } else {
            store = try ServerKeyStore(path: database, kek: kek, now: now)
        }
        let jwks = issuer.folder + "/jwks.json"
        let verifier = try await SignInVerifier(
            policy: TokenPolicy(issuer: Issuer.name, audience: Issuer.audience, refreshFloor: 0),
            jwks: { try Data(contentsOf: URL(fileURLWithPath: jwks)) })
        server = try KeyServer(
            store: store, verifier: verifier, realm: realm, limits: limits, dpop: dpop,
            clientCacheSeconds: clientCacheSeconds)
    }

    /// The first value `sql` gives, read beside the server (sqlite3 or psql).
    func count(_ sql: String) throws -> Int {
        database.hasPrefix("postgres")
            ? Int(try TestPostgres.value(database, sql)) ?? -1 : try KeyServerTests.rowCount(database, sql)
    }

    /// Runs `sql` beside the server (sqlite3 or psql), for tests that tamper.
    /// In SQLite, `FLIP(seq)` flips one bit of that audit entry's hash.
    func execute(_ sql: String) throws {
        if database.hasPrefix("postgres") {
            _ = try TestPostgres.value(database, sql)
        } else {
            let script = """
                import re, sqlite3, sys
                c = sqlite3.connect(sys.argv[1])
                flip = re.fullmatch(r"FLIP\\((\\d+)\\)", sys.argv[2])
                if flip:
                    h = bytearray(c.execute("SELECT hash FROM audit WHERE seq = ?", (int(flip[1]),)).fetchone()[0])
                    h[7] ^= 1
                    c.execute("UPDATE audit SET hash = ? WHERE seq = ?", (bytes(h), int(flip[1])))
                    c.commit()
                else:
                    c.executescript(sys.argv[2])
                """
            let run = try Spawned.run("/usr/bin/env", ["python3", "-c", script, database, sql], output: .inherit)
            guard run.status == 0 else { throw CofferError(.io, "sqlite3 failed on \(sql)") }
        }
    }

    func run(_ test: @escaping @Sendable (any TestClientProtocol) async throws -> Void) async throws {
        TestTracing.bootstrapped
        defer { TestTracing.check() }
        // As coffer-server builds it, on a port of its own.
        let app = try buildApplication(server, KeyServerConfiguration(port: 0))
        try await app.test(.live) { client in try await test(client) }
    }
}

/// A response's JSON object.
func json(_ response: TestResponse) throws -> [String: Any] {
    try JSONSerialization.jsonObject(with: Data(response.body.readableBytesView)) as? [String: Any] ?? [:]
}

func bearer(_ token: String) -> HTTPFields { [.authorization: "Bearer \(token)"] }

func body(_ object: [String: Any]) throws -> ByteBuffer {
    ByteBuffer(bytes: try JSONSerialization.data(withJSONObject: object))
}

/// Checks a problem document: status, stable code, content type, request id.
func expectProblem(
    _ response: TestResponse, _ status: HTTPResponse.Status, _ code: String,
    sourceLocation: SourceLocation = #_sourceLocation
) throws {
    #expect(response.status == status, "\(code)", sourceLocation: sourceLocation)
    #expect(response.headers[.contentType] == "application/problem+json", sourceLocation: sourceLocation)
    let document = try json(response)
    #expect(document["code"] as? String == code, "\(document)", sourceLocation: sourceLocation)
    #expect(document["status"] as? Int == status.code, sourceLocation: sourceLocation)
    #expect(response.headers[HTTPField.Name("X-Request-Id")!]?.count == 16, sourceLocation: sourceLocation)
}
#endif
