#if Server
import ArgumentParser
import Coffer
import CofferKeyServer
import CofferKeyServerCore
import Foundation
import Logging
import NIOSSL

extension Serve {
    /// What an operator checks first when two replicas disagree: which
    /// database, realm and KEK this one serves with (never a secret).
    func logStart(_ logger: Logger, _ settings: ServerSettings, store: ServerKeyStore, tls: Bool) {
        logger.info(
            "coffer-server \(CofferVersion.string) starting",
            metadata: [
                "database": .string(dev ? "development data" : data.databaseDescription(settings)),
                "realm": .string(settings.value(realm, "realm") ?? "default"),
                "kek.primary": .string(String(format: "%08x", store.kekPrimaryID)),
                "tls": .string(tls ? "on" : "off (loopback)"),
            ])
    }

    static func decimalSeconds(_ text: String) throws -> Double {
        guard let value = Double(text), value.isFinite else {
            throw ValidationError("\(text) is not a number of seconds")
        }
        return value
    }

    static func count(_ text: String) throws -> Int {
        guard let value = Int(text) else { throw ValidationError("\(text) is not a whole number") }
        return value
    }

    static func limit(_ text: String?, flag: String) throws -> RateLimit? {
        guard let text else { return nil }
        do { return try RateLimit(text) } catch { throw ValidationError("\(flag): \(error)") }
    }

    /// The certificate and key files, read again at SIGHUP, or nil for plain HTTP.
    func serverCertificate(_ settings: ServerSettings) throws -> ServerCertificate? {
        let tlsCert = settings.value(self.tlsCert, "tls.cert")
        let tlsKey = settings.value(self.tlsKey, "tls.key")
        guard (tlsCert == nil) == (tlsKey == nil) else {
            throw ValidationError("--tls-cert and --tls-key go together")
        }
        guard let tlsCert, let tlsKey else { return nil }
        return try ServerCertificate(certificate: tlsCert, key: tlsKey)
    }

    /// For --dev: the given folder, or a new one, and a random KEK
    /// passphrase kept in it (mode 600) unless one is given.
    func developmentData() throws -> DataOptions {
        var data = self.data
        let directory =
            data.directory
            ?? FileManager.default.temporaryDirectory.appendingPathComponent(
                "coffer-server-dev-\(UUID().uuidString.prefix(8))"
            ).path
        try FileManager.default.createDirectory(
            atPath: directory, withIntermediateDirectories: true, attributes: [.posixPermissions: 0o700])
        data.directory = directory
        if data.kekPassphraseFile == nil && data.kekKeychain == nil {
            let file = directory + "/kek-passphrase"
            if !FileManager.default.fileExists(atPath: file) {
                let random = (0..<32).map { _ in UInt8.random(in: 0...255) }
                let text = Data(random).base64EncodedString() + "\n"
                guard
                    FileManager.default.createFile(
                        atPath: file, contents: Data(text.utf8), attributes: [.posixPermissions: 0o600])
                else { throw ValidationError("cannot write \(file)") }
            }
            data.kekPassphraseFile = file
        }
        return data
    }

    /// Where the issuer's keys are read from, and the algorithms its
    /// tokens may use: a JWKS file or URL (every algorithm this server
    /// accepts), or what discovery finds, whenever neither is given.
    func issuerKeys(_ settings: ServerSettings, issuer: String) async throws -> (
        @Sendable () async throws -> Data, [String]
    ) {
        let jwksFile = settings.value(self.jwksFile, "jwks.file")
        let jwksURL = settings.value(self.jwksURL, "jwks.url")
        let discovery = issuerDiscovery || settings.value(nil, "issuer-discovery") == "true"
        if discovery && (jwksFile != nil || jwksURL != nil) {
            throw ValidationError("--issuer-discovery finds the keys itself: give it without --jwks-file or --jwks-url")
        }
        if jwksFile != nil && jwksURL != nil { throw ValidationError("give one of --jwks-file and --jwks-url") }
        if let jwksURL {
            guard let url = URL(string: jwksURL) else { throw ValidationError("--jwks-url takes a URL") }
            return (try SignInVerifier.issuerKeys(at: url), SignInVerifier.supportedAlgorithms)
        }
        if let path = jwksFile {
            return ({ try Data(contentsOf: URL(fileURLWithPath: path)) }, SignInVerifier.supportedAlgorithms)
        }
        let found = try await IssuerDiscovery.discover(issuer: issuer)
        FileHandle.standardError.write(
            Data(
                "coffer-server: issuer discovery: keys from \(found.jwksURI.absoluteString), tokens signed with \(found.algorithms.joined(separator: ", "))\n"
                    .utf8))
        return (try SignInVerifier.issuerKeys(at: found.jwksURI), found.algorithms)
    }

    func refusalDelay(_ settings: ServerSettings) throws -> Duration {
        let milliseconds = try refusalDelay ?? settings.value(nil, "refusal-delay").map(Self.count) ?? 100
        guard (0...10_000).contains(milliseconds) else { throw ValidationError("--refusal-delay is 0 to 10,000 ms") }
        return .milliseconds(milliseconds)
    }
}
#endif
