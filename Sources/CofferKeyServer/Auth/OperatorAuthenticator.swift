#if Server
import CofferKeyServerCore
import Hummingbird
import HummingbirdAuth
import Tracing
import Logging

/// The admin and metrics routes' authenticator: a known operator token of
/// this realm, looked up in the operator table (stored as hashes). Each
/// route checks the scope it needs (``KeyServerContext/operatorActor(_:)``).
struct OperatorAuthenticator: AuthenticatorMiddleware {
    typealias Context = KeyServerContext
    /// Where operators are kept.
    let operators: ServerKeyStore
    let realm: String

    /// The span `authenticate` (``ServerSpan``), with no token in it.
    func authenticate(request: Request, context: KeyServerContext) async throws -> KeyServerIdentity? {
        try await ServerSpan.run("authenticate") { span in
            span.attributes["coffer.caller"] = "operator"
            return try await operatorIdentity(request)
        }
    }

    private func operatorIdentity(_ request: Request) async throws -> KeyServerIdentity {
        let authorization = try Authorization(request, accepting: [.bearer])
        // Another realm's operator is as unknown here as a made-up token.
        guard let info = try await operators.operatorFor(token: String(authorization.token)),
            info.realm == nil || info.realm == realm
        else {
            throw KeyServerError(.operatorTokenInvalid, "the operator token is not known")
        }
        guard !info.expired(at: operators.now()) else {
            throw KeyServerError(
                .operatorTokenExpired, "this operator token has expired; make a new one with coffer-server operator add"
            )
        }
        guard info.realm != nil else {
            throw KeyServerError(
                .operatorTokenUnbound,
                "this operator was made before operators had realms; make a new token with coffer-server operator add --realm"
            )
        }
        return KeyServerIdentity(kind: .operator(info))
    }

    /// Authenticates, then runs the route; a call refused for its token
    /// (401) or its scope (403 scope-missing) is written to the audit
    /// chain (``ServerKeyStore/auditRefusal(actor:code:method:route:)``).
    func handle(
        _ request: Request, context: KeyServerContext, next: (Request, KeyServerContext) async throws -> Response
    ) async throws -> Response {
        var context = context
        do {
            context.identity = try await authenticate(request: request, context: context)
        } catch let error as KeyServerError {
            await audit(error, actor: "operator:unknown", request, context)
            throw error
        }
        do {
            return try await next(request, context)
        } catch let error as KeyServerError where error.code == .scopeMissing {
            if case .operator(let info) = context.identity?.kind {
                await audit(error, actor: "operator:" + info.name, request, context)
            }
            throw error
        }
    }

    func audit(_ error: KeyServerError, actor: String, _ request: Request, _ context: KeyServerContext) async {
        // A known operator refused for its expiry or realm is named.
        var actor = actor
        if error.code == .operatorTokenExpired || error.code == .operatorTokenUnbound,
            let authorization = try? Authorization(request, accepting: [.bearer]),
            let info = try? await operators.operatorFor(token: String(authorization.token))
        {
            actor = "operator:" + info.name
        }
        let route = context.endpointPath.map(ProblemMiddleware<KeyServerContext>.route) ?? "unmatched"
        if let failure = await operators.auditRefusal(
            actor: actor, code: error.code.name, method: request.method.rawValue, route: route)
        {
            context.logger.error(
                "a refused operator call could not be audited", metadata: ["error.type": "\(type(of: failure))"])
        }
    }
}
#endif
