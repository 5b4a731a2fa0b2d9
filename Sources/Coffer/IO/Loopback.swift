/// The host names Coffer's clients and servers take for this machine's own
/// loopback, exactly as written: `127.0.0.1`, `::1` (bare or bracketed, as
/// a URL gives it) and `localhost`. Another spelling of a loopback address
/// (`127.1`) counts as a remote host, so a check never passes by accident.
package enum Loopback {
    package static let hosts: Set<String> = ["127.0.0.1", "::1", "[::1]", "localhost"]

    package static func isHost(_ host: String?) -> Bool { host.map(hosts.contains) ?? false }
}
