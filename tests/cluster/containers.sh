# shellcheck shell=bash
# What the container stand-ins (bin/apptainer, bin/shifter) share; sourced, not run. They run the
# command in place: this machine's file system, Python and environment are the "image". They parse
# options as the real tools do, so a launch line the real tool would reject fails here too.

refuse() {
    echo "${0##*/} (maple-ci test stand-in): $*" >&2
    exit 255
}

# A registry image reference as Docker's reference grammar allows it ([host[:port]/]path[:tag]
# [@digest]); anything else (`nvcr.io#nvidia/pytorch:24.01`, enroot's spelling) is no image the
# real runtime could pull.
check_registry_image() {
    local part='[a-z0-9]+(([._]|__|-+)[a-z0-9]+)*'
    local label='[A-Za-z0-9]([A-Za-z0-9-]*[A-Za-z0-9])?'
    local host="$label(\\.$label)*(:[0-9]+)?"
    local grammar="^($host/)?$part(/$part)*(:[A-Za-z0-9_][A-Za-z0-9_.-]{0,127})?(@sha256:[0-9a-f]{64})?\$"
    [[ $1 =~ $grammar ]] || refuse "'$1' is not a registry image reference"
}

# export each VAR=VALUE of a list (the runtimes pass them into the container's environment)
export_pairs() {
    local pair
    for pair in "$@"; do
        [[ $pair == [A-Za-z_]*=* ]] || refuse "environment setting '$pair' is not VAR=VALUE"
        export "${pair?}"
    done
}
