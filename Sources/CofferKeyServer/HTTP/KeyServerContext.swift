#if Server
import CofferKeyServerCore
import Foundation
import Hummingbird
import HummingbirdAuth
import Logging
import NIOCore

/// The request context of the key server's router: Hummingbird's basic
/// context, the connection's peer address (which the per-address rate
/// limit counts), and the authenticated caller.
public struct KeyServerContext: AuthRequestContext, RemoteAddressRequestContext {
    public var coreContext: CoreRequestContextStorage
    public let remoteAddress: SocketAddress?
    /// The caller, once the route group's authenticator accepted them
    /// (``KeyServerIdentity``).
    public var identity: KeyServerIdentity?

    public init(source: ApplicationRequestContextSource) {
        coreContext = .init(source: source)
        remoteAddress = source.channel.remoteAddress
        identity = nil
        forwardedClient = nil
        pendingCounts = nil
    }

    /// A key request's shared rate counts, which its route raises with the
    /// release (``SharedRateLimitMiddleware``).
    var pendingCounts: PendingCounts?

    /// The client a trusted proxy named (``TrustedProxies``), as the limits name it.
    var forwardedClient: String?

    /// The address as the rate limit names it: the IP without the port.
    var clientAddress: String? { forwardedClient ?? remoteAddress.flatMap(Self.limitedAddress) }

    /// The client an address stands for, as the per-address limits count
    /// it (security review 3, G14): an IPv4 address (also one mapped into
    /// IPv6) whole, an IPv6 address by its /64 (a host is given a /64 and
    /// chooses its own 64 low bits, so counting whole addresses would give
    /// it 2^64 buckets), a Unix socket by its path.
    static func limitedAddress(_ address: SocketAddress) -> String? {
        guard let bytes = TrustedProxies.bytes(address) else { return address.pathname }
        guard bytes.count == 16 else { return bytes.map(String.init).joined(separator: ".") }
        let groups = stride(from: 0, to: 8, by: 2).map {
            String(UInt16(bytes[$0]) << 8 | UInt16(bytes[$0 + 1]), radix: 16)
        }
        return groups.joined(separator: ":") + "::/64"
    }
}

extension KeyServerContext {
    /// The signed-in user the authenticator accepted.
    func caller() throws -> Caller {
        guard case .user(let caller) = identity?.kind else {
            throw KeyServerError(.tokenMissing, "this route needs a sign-in token")
        }
        return caller
    }

    /// The operator, who must hold `scope`, as the audit log names them.
    func operatorActor(_ scope: OperatorScope) throws -> String {
        guard case .operator(let info) = identity?.kind else {
            throw KeyServerError(.operatorTokenInvalid, "the operator token is not known")
        }
        guard info.scopes.contains(scope) else {
            throw KeyServerError(.scopeMissing, "this operator token lacks the \(scope) scope")
        }
        return "operator:" + info.name
    }

    /// One log line for an operator's change, done: who and what, never the
    /// subject (the audit chain has it).
    func logOperatorAction(_ action: String) {
        guard case .operator(let info) = identity?.kind else { return }
        logger.info(
            "operator \(info.name): \(action)", metadata: ["operator": "\(info.name)", "operator.action": "\(action)"])
    }
}
#endif
