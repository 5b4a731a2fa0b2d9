#if Server
import ArgumentParser
import CofferKeyServerCore
import Configuration
import Foundation
import SystemPackage

/// The server's settings through swift-configuration: a flag wins, then an
/// environment variable (`COFFER_SERVER_` and the key in capitals, dots as
/// underscores: `COFFER_SERVER_JWKS_URL`), then the `--config` JSON file
/// (the same keys as nested objects: `{"jwks": {"url": …}}`).
struct ServerSettings: Sendable {
    let reader: ConfigReader

    static func load(configFile: String?, environment: [String: String] = ProcessInfo.processInfo.environment)
        async throws -> ServerSettings
    {
        try checkEnvironment(environment)
        var providers: [any ConfigProvider] = [
            EnvironmentVariablesProvider(environmentVariables: environment).prefixKeys(with: ["coffer", "server"])
        ]
        if let configFile {
            guard FileManager.default.isReadableFile(atPath: configFile) else {
                throw ValidationError("cannot read the configuration file \(configFile)")
            }
            try checkFile(configFile)
            do {
                providers.append(try await FileProvider<JSONSnapshot>(filePath: FilePath(configFile)))
            } catch {
                throw ValidationError("the configuration file \(configFile) is not a JSON object of settings")
            }
        }
        return ServerSettings(reader: ConfigReader(providers: providers))
    }

    /// The flag, else the configured value of `key`.
    func value(_ flag: String?, _ key: String) -> String? {
        assert(Self.known.contains(key), "\(key) is read but not in ServerSettings.known")
        return flag ?? reader.string(forKey: ConfigKey(key))
    }

    /// Every setting the server reads (docs/key-server.md, "Settings"). A
    /// setting of another name, in the file or the environment, is refused:
    /// a misspelt one would otherwise be ignored, and `"databse"` would
    /// send a replica to a new database with a new KEK.
    static let known: Set<String> = [
        "address-rate-limit", "audience", "audit-anchor-every", "audit-checkpoint", "client-cache-seconds", "data",
        "idle-timeout", "request-timeout",
        "database", "issuer", "issuer-discovery", "jwks.file", "jwks.refresh-floor", "jwks.url", "kek.keychain",
        "kek.keychain.passphrase.file", "kek.passphrase.file", "kek.pkcs11.key", "kek.pkcs11.module",
        "kek.pkcs11.pin.file", "kek.pkcs11.token", "kek.tag", "leeway", "listen", "log-format", "log-level",
        "max-connections", "max-connections-per-address", "otel.endpoint", "postgres.password.file", "public-url",
        "rate-limit", "realm",
        "refusal-delay",
        "require-dpop", "subject.claim", "tls.cert", "tls.key", "trusted-proxies",
    ]

    /// `COFFER_SERVER_` variables that are not settings: the binary's path the scripts use.
    static let otherVariables: Set<String> = ["COFFER_SERVER_BIN"]

    static func variable(_ key: String) -> String {
        "COFFER_SERVER_"
            + key.uppercased().replacingOccurrences(of: ".", with: "_").replacingOccurrences(
                of: "-", with: "_")
    }

    static func checkEnvironment(_ environment: [String: String]) throws {
        let names = Set(known.map(variable))
        for name in environment.keys.sorted()
        where name.hasPrefix("COFFER_SERVER_") && !names.contains(name) && !otherVariables.contains(name) {
            throw ValidationError(
                "\(name) is not a setting\(suggestion(name, among: names)) (docs/key-server.md lists them)")
        }
    }

    /// Every member of the file, nested (`{"jwks": {"url": …}}`) or dotted
    /// (`"jwks.url"`), must name a setting.
    static func checkFile(_ path: String) throws {
        guard let data = FileManager.default.contents(atPath: path),
            let object = try? JSONSerialization.jsonObject(with: data) as? [String: Any]
        else { throw ValidationError("the configuration file \(path) is not a JSON object of settings") }
        var leaves: [String] = []
        func walk(_ value: Any, _ prefix: String) {
            if let object = value as? [String: Any] {
                for (name, inner) in object { walk(inner, prefix.isEmpty ? name : prefix + "." + name) }
            } else {
                leaves.append(prefix)
            }
        }
        walk(object, "")
        for leaf in leaves.sorted() where !known.contains(leaf) {
            throw ValidationError(
                "the configuration file \(path) sets \"\(leaf)\", which is not a setting\(suggestion(leaf, among: known)) (docs/key-server.md lists them)"
            )
        }
    }

    /// "; did you mean X?" for the known name nearest `name` (at most two edits away).
    static func suggestion(_ name: String, among names: Set<String>) -> String {
        func distance(_ a: [Character], _ b: [Character]) -> Int {
            var row = Array(0...b.count)
            for i in 1...max(a.count, 1) where !a.isEmpty {
                var previous = row[0]
                row[0] = i
                for j in stride(from: 1, through: b.count, by: 1) {
                    let current = row[j]
                    row[j] = min(row[j] + 1, row[j - 1] + 1, previous + (a[i - 1] == b[j - 1] ? 0 : 1))
                    previous = current
                }
            }
            return a.isEmpty ? b.count : row[b.count]
        }
        let nearest = names.map { ($0, distance(Array(name), Array($0))) }.min { ($0.1, $0.0) < ($1.1, $1.0) }
        guard let nearest, nearest.1 <= 2 else { return "" }
        return "; did you mean \(nearest.0)?"
    }

    /// Like ``value(_:_:)``, but a setting the server cannot do without.
    func required(_ flag: String?, _ key: String, flag name: String) throws -> String {
        guard let value = value(flag, key), !value.isEmpty else {
            let variable = "COFFER_SERVER_" + key.uppercased().replacingOccurrences(of: ".", with: "_")
            throw ValidationError("give \(name), \(variable) or \"\(key)\" in the configuration file")
        }
        return value
    }
}
#endif
