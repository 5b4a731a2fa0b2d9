// swift-tools-version: 6.1
// Coffer's benchmarks, in their own package so that the library's users
// never build them. Build and run from the repository root:
//
//     swift build -c release --traits Server --product coffer &&
//       swift run -c release --package-path Benchmarks coffer-bench
import PackageDescription

let package = Package(
    name: "CofferBenchmarks",
    platforms: [.macOS(.v15)],
    traits: [
        .trait(name: "SecretService", description: "Also measure the Secret Service keychain (needs libsecret-1-dev)"),
        .default(enabledTraits: []),
    ],
    dependencies: [
        .package(
            name: "Coffer", path: "..",
            traits: ["Server", .trait(name: "SecretService", condition: .when(traits: ["SecretService"]))]),
        .package(url: "https://github.com/apple/swift-crypto.git", from: "4.5.2"),
        .package(url: "https://github.com/groue/GRDB.swift.git", from: "7.10.0"),
        .package(url: "https://github.com/vapor/postgres-nio.git", from: "1.33.2"),
        .package(url: "https://github.com/apple/swift-nio.git", from: "2.101.2"),
        .package(url: "https://github.com/apple/swift-log.git", from: "1.16.2"),
    ],
    targets: [
        .executableTarget(
            name: "coffer-bench",
            dependencies: [
                .product(name: "Coffer", package: "Coffer"),
                .product(name: "CofferKeychain", package: "Coffer"),
                .product(name: "CofferStore", package: "Coffer"),
                .product(name: "CofferStorePostgres", package: "Coffer"),
                .product(name: "PostgresNIO", package: "postgres-nio"),
                .product(name: "NIOCore", package: "swift-nio"),
                .product(name: "NIOPosix", package: "swift-nio"),
                .product(name: "Logging", package: "swift-log"),
                .product(name: "GRDB", package: "GRDB.swift"),
                .product(name: "Crypto", package: "swift-crypto"),
                .product(name: "CryptoExtras", package: "swift-crypto"),
            ],
            swiftSettings: [.swiftLanguageMode(.v6)]
        )
    ]
)
