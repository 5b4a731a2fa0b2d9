#if Server
import CofferKeyServerCore
import Hummingbird
import HummingbirdAuth

/// The admin and metrics routes' authenticator: a known operator token of
/// this realm, looked up in the operator table (stored as hashes). Each
/// route checks the scope it needs (``KeyServerContext/operatorActor(_:)``).
struct OperatorAuthenticator: AuthenticatorMiddleware {
    typealias Context = KeyServerContext
    /// Where operators are kept.
    let operators: ServerKeyStore
    let realm: String

    func authenticate(request: Request, context: KeyServerContext) async throws -> KeyServerIdentity? {
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
}
#endif
