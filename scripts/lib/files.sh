# File helpers for Cairn's scripts. Sourced by the scripts.

# Makes DEST hold exactly the files of SRC, then removes SRC. Only a file whose bytes
# differ is written, so what watches DEST's modification times (the desktop app's build
# embeds ui/dist) sees a change only where there is one: an unchanged UI relinks nothing.
# usage: replace_changed SRC DEST
replace_changed() {
    local src=$1 dest=$2 file
    mkdir -p "$dest"
    while IFS= read -r -d '' file; do
        if ! cmp -s "$src/$file" "$dest/$file"; then
            mkdir -p "$(dirname "$dest/$file")"
            cp "$src/$file" "$dest/$file"
        fi
    done < <(cd "$src" && find . -type f -print0)
    while IFS= read -r -d '' file; do
        [ -e "$src/$file" ] || rm -f "$dest/$file"
    done < <(cd "$dest" && find . -type f -print0)
    rm -rf "$src"
}
