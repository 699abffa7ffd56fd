# Installs what Cairn's scripts need when it is missing. Sourced by the scripts.

# Installs the Debian packages named, if any is missing. apt's words go to stderr: a
# script's stdout may be its answer (`scripts/package` prints the file it made, and a
# fresh machine's first nsis install once ran into that path).
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
    $sudo apt-get update -qq >&2
    DEBIAN_FRONTEND=noninteractive $sudo apt-get install -y -qq --no-install-recommends \
        "${missing[@]}" >&2
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

# cargo-deb, which scripts/package builds the .deb with.
CARGO_DEB_VERSION=3.6.2

# usage: ensure_rust_target TRIPLE
ensure_rust_target() {
    if ! rustup target list --installed | grep -qx "$1"; then
        rustup target add "$1"
    fi
}

ensure_wasm_target() {
    ensure_rust_target wasm32-unknown-unknown
}

# Installs an npm package into the user's cache unless FILE (under its node_modules) is
# there already, and prints the folder it is in.
# usage: ensure_npm_package NAME VERSION FILE
ensure_npm_package() {
    local name=$1 version=$2 file=$3
    local dir="${XDG_CACHE_HOME:-$HOME/.cache}/cairn/$name-$version"
    if [ ! -e "$dir/node_modules/$file" ]; then
        command -v npm >/dev/null || ensure_packages nodejs npm
        echo "installing $name $version" >&2
        npm install --prefix "$dir" --no-save --no-audit --no-fund "$name@$version" >&2
    fi
    echo "$dir"
}

# binaryen's wasm-opt from npm (Debian's binaryen 108 makes a wasm that validates but
# never mounts: a blank window, no error), kept in the user's cache and put first on PATH.
BINARYEN_MAJOR=132
ensure_wasm_opt() {
    local dir
    dir=$(ensure_npm_package binaryen "$BINARYEN_MAJOR.0.0" .bin/wasm-opt)
    export PATH="$dir/node_modules/.bin:$PATH"
    if ! wasm-opt --version | grep -q "version $BINARYEN_MAJOR\b"; then
        echo "wasm-opt on PATH is not binaryen $BINARYEN_MAJOR: $(wasm-opt --version)" >&2
        return 1
    fi
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
# keychain and a notification server, fonts for screenshots, OCR to read them back, and
# xclip to read what the app copied; python3, whose sockets the sandbox tests try.
TEST_PACKAGES=(xvfb xauth webkit2gtk-driver dbus dbus-x11 gnome-keyring libsecret-tools
    dunst libnotify-bin xdotool imagemagick fonts-dejavu-core tesseract-ocr tesseract-ocr-eng
    xclip python3)

# axe-core from npm, the accessibility checker browsers' audits run: the desktop E2E
# injects it into the real window. Kept in the user's cache; its path goes to the tests
# in CAIRN_AXE_JS.
AXE_CORE_VERSION=4.14.1
ensure_axe_core() {
    local dir
    dir=$(ensure_npm_package axe-core "$AXE_CORE_VERSION" axe-core/axe.min.js)
    export CAIRN_AXE_JS="$dir/node_modules/axe-core/axe.min.js"
}
