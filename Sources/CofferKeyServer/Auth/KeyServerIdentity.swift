#if Server
import CofferKeyServerCore
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
#endif
