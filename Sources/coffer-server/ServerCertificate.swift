#if Server
import ArgumentParser
import Coffer
import Foundation
import NIOCore
import NIOSSL

/// The TLS certificate chain and key a running server presents, read from
/// their files at start and again at SIGHUP (``ReloadService``): each new
/// connection's handshake takes the chain and key read last (NIOSSL's
/// per-handshake override), connections already open keep theirs, and a
/// pair that does not read or does not match keeps the old one.
final class ServerCertificate: Sendable {
    let certificateFile: String
    let keyFile: String
    /// A chain and its key.
    struct Pair: Sendable {
        let chain: [NIOSSLCertificateSource]
        let key: NIOSSLPrivateKeySource
    }
    private let current: Locked<Pair>

    init(certificate: String, key: String) throws {
        certificateFile = certificate
        keyFile = key
        current = Locked(try Self.read(certificate: certificate, key: key))
    }

    /// The chain and key from the files, checked to belong together.
    static func read(certificate: String, key: String) throws -> Pair {
        let chain = try NIOSSLCertificate.fromPEMFile(certificate)
        guard !chain.isEmpty else {
            throw ValidationError("the TLS certificate file \(certificate) holds no certificate")
        }
        let privateKey = try NIOSSLPrivateKey(
            bytes: Array(try ServerFiles.secretFile(key, what: "the TLS key file")), format: .pem)
        // A context made from the pair is what checks that the key is the
        // certificate's (BoringSSL refuses a mismatched pair).
        var check = TLSConfiguration.makeServerConfiguration(
            certificateChain: chain.map { .certificate($0) }, privateKey: .privateKey(privateKey))
        check.minimumTLSVersion = .tlsv12
        do {
            _ = try NIOSSLContext(configuration: check)
        } catch {
            throw ValidationError("the TLS key file \(key) is not the key of the certificate in \(certificate)")
        }
        return Pair(chain: chain.map { .certificate($0) }, key: .privateKey(privateKey))
    }

    /// Reads the files again; on failure the server keeps presenting the
    /// pair it had, and the error says why.
    func reload() throws {
        let fresh = try Self.read(certificate: certificateFile, key: keyFile)
        current.withLock { $0 = fresh }
    }

    /// The server's TLS configuration: TLS 1.2 or later, the pair read
    /// at start, and each handshake given the pair read last.
    func configuration() -> TLSConfiguration {
        let pair = current.withLock { $0 }
        var configuration = TLSConfiguration.makeServerConfiguration(
            certificateChain: pair.chain, privateKey: pair.key)
        configuration.minimumTLSVersion = .tlsv12
        let current = self.current
        configuration.sslContextCallback = { _, promise in
            let pair = current.withLock { $0 }
            var override = NIOSSLContextConfigurationOverride()
            override.certificateChain = pair.chain
            override.privateKey = pair.key
            promise.succeed(override)
        }
        return configuration
    }
}
#endif
