#if Server
import ArgumentParser
import CofferKeyServer
import CofferKeyServerCore
import Foundation

/// How long clients may take and how many connections they may hold
/// (``ClientLimits``), and which proxies' word about the client is taken.
struct ConnectionOptions: ParsableArguments {
    @Option(
        help: ArgumentHelp(
            "Close a connection that sends no whole request part (or no next request) for this long (default 30).",
            valueName: "SECONDS"))
    var idleTimeout: Double?

    @Option(
        help: ArgumentHelp(
            "Close a connection whose request body has not ended this long after its head (default 3).",
            valueName: "SECONDS"))
    var requestTimeout: Double?

    @Option(
        help: ArgumentHelp(
            "At most N connections; past it a new one closes the longest-idle, else the slowest body (default 3/4 of the open-file limit).",
            valueName: "N"))
    var maxConnections: Int?

    @Option(
        help: ArgumentHelp(
            "At most N connections from one client address, an IPv6 host by its /64 (default 1/16 of --max-connections, at least 8).",
            valueName: "N"))
    var maxConnectionsPerAddress: Int?

    @Option(
        name: .customLong("trusted-proxy"),
        help: ArgumentHelp(
            "A load balancer (ADDRESS or ADDRESS/PREFIX; repeat for several) whose X-Forwarded-For or Forwarded names the client.",
            valueName: "NETWORK"))
    var trustedProxies: [String] = []

    /// The timeouts and the connection limits, from the flags or the settings.
    func clientLimits(_ settings: ServerSettings) throws -> ClientLimits {
        func seconds(_ flag: Double?, _ key: String, _ fallback: Duration) throws -> Duration {
            guard let value = try flag ?? settings.value(nil, key).map(Serve.decimalSeconds) else { return fallback }
            guard value > 0, value <= 3600 else {
                throw ValidationError("--\(key) is more than 0 and at most 3600 seconds")
            }
            return .milliseconds(Int64((value * 1000).rounded()))
        }
        var limits = ClientLimits()
        limits.idleTimeout = try seconds(idleTimeout, "idle-timeout", limits.idleTimeout)
        limits.requestTimeout = try seconds(requestTimeout, "request-timeout", limits.requestTimeout)
        if let count = try maxConnections ?? settings.value(nil, "max-connections").map(Serve.count) {
            guard count >= 1 else { throw ValidationError("--max-connections is at least 1") }
            limits.maximumConnections = count
        }
        if let count = try maxConnectionsPerAddress
            ?? settings.value(nil, "max-connections-per-address").map(Serve.count)
        {
            guard count >= 1 else { throw ValidationError("--max-connections-per-address is at least 1") }
            limits.maximumConnectionsPerAddress = count
        }
        return limits
    }

    /// `--trusted-proxy`, else the setting `trusted-proxies` (networks separated by commas).
    func trustedProxies(_ settings: ServerSettings) throws -> TrustedProxies {
        let networks =
            trustedProxies.isEmpty
            ? (settings.value(nil, "trusted-proxies") ?? "").split(separator: ",").map {
                $0.trimmingCharacters(in: .whitespaces)
            } : trustedProxies
        do { return try TrustedProxies(networks.filter { !$0.isEmpty }) } catch {
            throw ValidationError("--trusted-proxy: \(error)")
        }
    }
}
#endif
