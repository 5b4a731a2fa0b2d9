#if Server
import ArgumentParser
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
        var providers: [any ConfigProvider] = [
            EnvironmentVariablesProvider(environmentVariables: environment).prefixKeys(with: ["coffer", "server"])
        ]
        if let configFile {
            guard FileManager.default.isReadableFile(atPath: configFile) else {
                throw ValidationError("cannot read the configuration file \(configFile)")
            }
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
        flag ?? reader.string(forKey: ConfigKey(key))
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
