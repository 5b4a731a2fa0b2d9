#if Server
import HTTPTypes
import Hummingbird

/// One route a controller serves: its method, its path in the
/// controller's group (`:name` a parameter) and what answers it.
struct Endpoint: Sendable {
    let method: HTTPRequest.Method
    let path: String
    let respond: @Sendable (Request, KeyServerContext) async throws -> Response

    init(
        _ method: HTTPRequest.Method, _ path: String = "",
        _ respond: @escaping @Sendable (Request, KeyServerContext) async throws -> Response
    ) {
        self.method = method
        self.path = path
        self.respond = respond
    }
}

/// A group of routes behind the same middleware (as hummingbird-examples'
/// controllers are): the router registers each controller's ``endpoints``
/// under its ``path`` behind what ``guarding(_:)`` adds, and the `405`
/// table (``RouteTable``) is made from the same list.
protocol KeyServerController: Sendable {
    /// The group's path (`/v1/keys`).
    var path: String { get }
    var endpoints: [Endpoint] { get }
    /// `group` behind the controller's middleware (its authenticator and
    /// the shared rate limits); the default adds none.
    func guarding(_ group: RouterGroup<KeyServerContext>) -> RouterGroup<KeyServerContext>
}

extension KeyServerController {
    func guarding(_ group: RouterGroup<KeyServerContext>) -> RouterGroup<KeyServerContext> { group }
}

/// A controller whose routes run behind an authenticator, then the shared
/// rate limits (which count only what the authenticator accepted).
protocol AuthenticatedController: KeyServerController {
    associatedtype Authenticator: RouterMiddleware<KeyServerContext>
    var authenticator: Authenticator { get }
    var limits: SharedRateLimitMiddleware { get }
}

extension AuthenticatedController {
    func guarding(_ group: RouterGroup<KeyServerContext>) -> RouterGroup<KeyServerContext> {
        group.add(middleware: authenticator).add(middleware: limits)
    }
}

/// Every route's path and the methods it takes, for `405 Method Not
/// Allowed` with its `Allow` header (a parameter stands for any one
/// non-empty segment).
struct RouteTable: Sendable {
    let routes: [(segments: [Substring], methods: String)]

    init(_ controllers: [any KeyServerController]) {
        var methods: [String: [String]] = [:]
        var order: [String] = []
        for controller in controllers {
            for endpoint in controller.endpoints {
                let path = [controller.path, endpoint.path].filter { !$0.isEmpty }.joined(separator: "/")
                if methods[path] == nil { order.append(path) }
                methods[path, default: []].append(endpoint.method.rawValue)
            }
        }
        routes = order.map { path in
            (
                path.split(separator: "/").map { $0.hasPrefix(":") ? "*" : $0 },
                methods[path, default: []].joined(separator: ", ")
            )
        }
    }

    /// The methods `path` takes, if it is a route.
    func methods(of path: String) -> String? {
        let segments = path.split(separator: "/", omittingEmptySubsequences: false).dropFirst()
        return routes.first { route in
            route.segments.count == segments.count
                && zip(route.segments, segments).allSatisfy { $0 == "*" ? !$1.isEmpty : $0 == $1 }
        }?.methods
    }
}
#endif
