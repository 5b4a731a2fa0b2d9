// swift-tools-version: 6.1
// The seed app's list of presents, on Coffer: the code an iOS developer
// copies. The model (PresentsModel) and a small command-line front end
// (presents) build and test on Linux; PresentsView.swift is the SwiftUI
// screen, compiled where SwiftUI exists.
import PackageDescription

let package = Package(
    name: "Presents",
    platforms: [.macOS(.v15), .iOS(.v18)],
    products: [.library(name: "PresentsModel", targets: ["PresentsModel"])],
    dependencies: [
        // An app names no trait: it resolves swift-crypto, swift-asn1 and GRDB only.
        .package(name: "Coffer", path: "../..")
    ],
    targets: [
        .target(
            name: "PresentsModel",
            dependencies: [
                .product(name: "Coffer", package: "Coffer"),
                .product(name: "CofferCompat", package: "Coffer"),
                .product(name: "CofferStore", package: "Coffer"),
                .product(name: "CofferKeyClient", package: "Coffer"),
            ]
        ),
        .executableTarget(name: "presents", dependencies: ["PresentsModel"]),
        .testTarget(
            name: "PresentsModelTests",
            dependencies: [
                "PresentsModel", .product(name: "Coffer", package: "Coffer"),
                .product(name: "CofferKeyClient", package: "Coffer"),
            ]
        ),
    ]
)

for target in package.targets {
    target.swiftSettings = [.swiftLanguageMode(.v6), .enableUpcomingFeature("ExistentialAny")]
}
