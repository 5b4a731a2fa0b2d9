#if Server
import Hummingbird
import HummingbirdAuth

/// Who a request comes from, once its route group's authenticator has
/// accepted it: a signed-in user (subject, device key, DPoP proof) or an
/// operator (name and scopes). It rides in the request context
/// (``KeyServerContext/identity``), as hummingbird-auth has it.
public struct KeyServerIdentity: Sendable {
    enum Kind: Sendable {
        case user(Caller)
        case `operator`(OperatorInfo)
    }

    let kind: Kind

    /// The signed-in subject, for a user.
    public var subject: String? {
        if case .user(let caller) = kind { return caller.subject }
        return nil
    }

    /// The operator's name, for an operator.
    public var operatorName: String? {
        if case .operator(let info) = kind { return info.name }
        return nil
    }
}

/// The key routes' authenticator: the request's sign-in token (and DPoP
/// proof), checked as ``KeyServer`` checks them, then the shared rate
/// limits; a request it refuses never reaches a route.
struct UserAuthenticator: AuthenticatorMiddleware {
    typealias Context = KeyServerContext
    let server: KeyServer

    func authenticate(request: Request, context: KeyServerContext) async throws -> KeyServerIdentity? {
        KeyServerIdentity(kind: .user(try await server.caller(request, context)))
    }
}

/// The admin routes' authenticator: a known operator token (its scopes
/// are checked by each route, ``KeyServerContext/operatorActor(_:)``).
struct OperatorAuthenticator: AuthenticatorMiddleware {
    typealias Context = KeyServerContext
    let server: KeyServer

    func authenticate(request: Request, context: KeyServerContext) async throws -> KeyServerIdentity? {
        // Another realm's operator is as unknown here as a made-up token.
        guard let info = try await server.store.operatorFor(token: String(try KeyServer.bearer(request))),
            info.realm == nil || info.realm == server.realm
        else {
            throw KeyServerError(.operatorTokenInvalid, "the operator token is not known")
        }
        guard info.realm != nil else {
            throw KeyServerError(
                .operatorTokenUnbound,
                "this operator was made before operators had realms; make a new token with coffer-server operator add --realm"
            )
        }
        try await server.admitAddress(context)
        return KeyServerIdentity(kind: .operator(info))
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
}
#endif
