import Coffer
import CofferKeyClient
import Foundation

#if Server
import CofferKeyClientNIO
import AsyncHTTPClient
#endif

/// How the CLI reaches a key server: `URLSession` and the system's trust
/// roots, or — with `--ca-file` (`--kek-server-ca-file`,
/// `--anchor-ca-file`) — a client that trusts only that file's
/// certificates, for a server whose certificate a private CA issued.
///
/// FoundationNetworking's `URLSession` on Linux takes no trust roots
/// from its caller (and ignores `URLSessionCertificateAuthorityInfoFile`
/// in this toolchain), so the file is honoured through AsyncHTTPClient,
/// which the Server trait links (`scripts/install` builds with it).
enum ServerTrust {
    /// The transport for a server whose CA is in `caFile` (PEM), or the
    /// default one when nil; `option` names the flag in errors.
    static func transport(caFile: String?, option: String) throws -> any KeyServerTransport {
        guard let caFile else { return URLSessionTransport() }
        let pem = try Input.readAll(path: caFile, what: "the CA file (\(option))")
        #if Server
        do {
            // One client per CA (the same file read twice gives the same bytes).
            let text = String(decoding: pem, as: UTF8.self)
            let client = try clients.withLock { clients in
                if let client = clients[text] { return client }
                let client = try AsyncHTTPClientTransport.pinnedHTTPClient(trusting: text)
                clients[text] = client
                return client
            }
            return AsyncHTTPClientTransport(client)
        } catch is KeyClientError {
            throw CLIFailure(
                "\(option) \(caFile) holds no certificate in PEM",
                hint: "give the CA's certificate as PEM (-----BEGIN CERTIFICATE-----)", status: 64)
        }
        #else
        _ = pem
        throw CLIFailure(
            "\(option) needs coffer built with the Server trait (swift build --traits Server; scripts/install builds it so)",
            status: 64)
        #endif
    }

    #if Server
    /// Clients live as long as the command: AsyncHTTPClient requires a
    /// shutdown before a client is released, and the process's end is that.
    private static let clients = Locked<[String: HTTPClient]>([:])
    #endif
}
