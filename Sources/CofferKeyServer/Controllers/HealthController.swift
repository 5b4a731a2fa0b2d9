#if Server
import CofferKeyServerCore
import HTTPTypes
import Hummingbird
import NIOCore

/// `/v1/health` (the process answers) and `/v1/ready` (and so does its
/// database): for load balancers, no token.
struct HealthController: KeyServerController {
    let store: ServerKeyStore

    var path: String { "/v1" }

    var endpoints: [Endpoint] {
        [
            Endpoint(.get, "health") { _, _ in JSONBody.response(Health(status: "ok")) },
            Endpoint(.get, "ready") { _, _ in
                try await store.ping()
                return JSONBody.response(Health(status: "ready"))
            },
        ]
    }
}

/// `/metrics`: counts and cache rates, no subject; still only for an
/// operator token of the metrics scope (security review 4, H9), so that a
/// balancer that passes every path on exposes nothing.
struct MetricsController: AuthenticatedController {
    let authenticator: OperatorAuthenticator
    let limits: SharedRateLimitMiddleware
    let exposition: @Sendable () async -> String

    var path: String { "/metrics" }

    var endpoints: [Endpoint] {
        [
            Endpoint(.get) { _, context in
                _ = try context.operatorActor(.metrics)
                var headers = HTTPFields()
                headers[.contentType] = "text/plain; version=0.0.4; charset=utf-8"
                return Response(
                    status: .ok, headers: headers, body: .init(byteBuffer: ByteBuffer(string: await exposition())))
            }
        ]
    }
}

/// `/v1/dev/token`: sign-in tokens from the development issuer, only when
/// the server has one (`serve --dev`).
struct DevTokenController: KeyServerController {
    let issuer: DevIssuer
    let realm: String

    var path: String { "/v1/dev" }

    var endpoints: [Endpoint] {
        [
            Endpoint(.post, "token") { request, _ in
                let body = try await JSONBody.decode(DevTokenRequest.self, request)
                _ = try KeyName(realm: realm, subject: body.subject, purpose: "-")
                return JSONBody.response(["token": try await issuer.token(subject: body.subject)])
            }
        ]
    }
}
#endif
