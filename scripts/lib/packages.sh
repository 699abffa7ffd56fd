# Installs what Cairn's scripts need when it is missing. Sourced by the scripts.

# Installs the Debian packages named, if any is missing.
ensure_packages() {
    local missing=()
    for package in "$@"; do
        dpkg-query -W -f='${Status}' "$package" 2>/dev/null | grep -q "install ok installed" \
            || missing+=("$package")
    done
    [ ${#missing[@]} -eq 0 ] && return 0
    echo "installing ${missing[*]}" >&2
    local sudo=""
    [ "$(id -u)" -ne 0 ] && sudo="sudo"
    $sudo apt-get update -qq
    DEBIAN_FRONTEND=noninteractive $sudo apt-get install -y -qq --no-install-recommends "${missing[@]}"
}

# Installs a cargo tool unless `$binary --version` already reports the wanted version.
# usage: ensure_cargo_tool BINARY CRATE VERSION [cargo install flags...]
ensure_cargo_tool() {
    local binary=$1 crate=$2 version=$3
    shift 3
    if command -v "$binary" >/dev/null && "$binary" --version 2>/dev/null | grep -qF " $version"; then
        return 0
    fi
    echo "installing $crate $version" >&2
    cargo install "$crate" --version "$version" "$@"
}

ensure_wasm_target() {
    if ! rustup target list --installed | grep -qx wasm32-unknown-unknown; then
        rustup target add wasm32-unknown-unknown
    fi
}

# binaryen's wasm-opt from npm (Debian's binaryen 108 cannot read the wasm today's rustc
# emits), kept in the user's cache and put on PATH for trunk. The version is the one
# ui/Trunk.toml makes trunk insist on (`wasm_opt = "version_132"`).
ensure_wasm_opt() {
    local major
    major=$(sed -n 's/^wasm_opt = "version_\([0-9]*\)"$/\1/p' ui/Trunk.toml)
    if [ -z "$major" ]; then
        echo "ui/Trunk.toml names no wasm_opt version" >&2
        return 1
    fi
    local dir="${XDG_CACHE_HOME:-$HOME/.cache}/cairn/binaryen-$major.0.0"
    if [ ! -x "$dir/node_modules/.bin/wasm-opt" ]; then
        command -v npm >/dev/null || ensure_packages nodejs npm
        echo "installing binaryen $major.0.0" >&2
        npm install --prefix "$dir" --no-save --no-audit --no-fund "binaryen@$major.0.0" >&2
    fi
    export PATH="$dir/node_modules/.bin:$PATH"
}

# The wasm-bindgen version Cargo.lock pins: wasm-bindgen-cli must match it exactly.
locked_wasm_bindgen_version() {
    awk '/^name = "wasm-bindgen"$/ { getline; gsub(/version = |"/, ""); print; exit }' Cargo.lock
}

# What building the CLI needs: the Secret Service backend of the keychain links libdbus.
BUILD_PACKAGES=(build-essential pkg-config libdbus-1-dev)

# What building the desktop app needs on top (Tauri v2 on WebKitGTK 4.1), and xdg-open
# for the links in answers.
DESKTOP_PACKAGES=(libwebkit2gtk-4.1-dev libgtk-3-dev libsoup-3.0-dev
    libjavascriptcoregtk-4.1-dev libayatana-appindicator3-dev librsvg2-dev
    xdg-utils)

# What the tests need: a headless display, WebDriver for WebKitGTK, a private D-Bus with a
# keychain and a notification server, fonts for screenshots, and OCR to read them back.
TEST_PACKAGES=(xvfb xauth webkit2gtk-driver dbus dbus-x11 gnome-keyring libsecret-tools
    dunst libnotify-bin xdotool imagemagick fonts-dejavu-core tesseract-ocr tesseract-ocr-eng)
