#!/usr/bin/env bash
# Writes perfwatch.1.gz (the man page) and perfwatch.bash-completion into OUTDIR from the help the
# perfwatch binary prints for itself and for every subcommand, so neither can drift from the CLI.
# Usage: packaging/cli-docs.sh PERFWATCH_BINARY OUTDIR
# Reads CLI11's help layout: a description line, "Usage: ...", then "Positionals:", "Options:" and
# "Subcommands:" sections of "  TERM   DESCRIPTION" rows (a long TERM puts DESCRIPTION on the next line).
set -euo pipefail
binary=$(realpath "$1")
out=$2
mkdir -p "$out"
# Through PATH, so that the usage lines say "perfwatch" rather than the build path.
bindir=$(mktemp -d)
trap 'rm -rf "$bindir"' EXIT
ln -s "$binary" "$bindir/perfwatch"
help_of() { PATH="$bindir:$PATH" perfwatch "$@" --help; }

man=$out/perfwatch.1
tables=$bindir/tables
: >"$tables"

# One command's help (stdin) as man text (stdout); its subcommands, options and the values options
# take as completion table entries appended to $tables. Roff: backslashes as \e, a leading . or '
# made literal, option dashes as \- (minus signs). Completion tables are keyed by command path
# ("perfwatch", "perfwatch rules lint"), then by an option ("perfwatch check --format").
describe_awk='
function roff(s) {
  gsub(/\\/, "\\e", s)
  while (match(s, /(^|[^[:alnum:]\\])-/)) s = substr(s, 1, RSTART + RLENGTH - 2) "\\-" substr(s, RSTART + RLENGTH)
  if (s ~ /^[.\047]/) s = "\\&" s
  return s
}
function flush(   names, n, k, i, choices, key) {
  if (term == "") return
  if (section == "Positionals") { split(term, w, " "); printf ".TP\n.I %s\n%s\n", roff(w[1]), roff(desc) }
  else if (path != "" || section != "Subcommands") printf ".TP\n.B %s\n%s\n", roff(term), roff(desc)
  if (section == "Subcommands") children = children (children == "" ? "" : " ") term
  if (section == "Options") {
    n = split(term, w, " "); k = split(w[1], names, ",")
    choices = ""; key = path == "" ? "perfwatch" : "perfwatch " path
    if (match(term, /\{[^}]*\}/)) { choices = substr(term, RSTART + 1, RLENGTH - 2); gsub(/,/, " ", choices) }
    for (i = 1; i <= k; i++) {
      options = options (options == "" ? "" : " ") names[i]
      if (n > 1) printf "[\"%s %s\"]=\"%s\" ", key, names[i], choices >> takes
    }
  }
  term = ""; desc = ""
}
NR == 1 {
  if (path == "") { sub(/^perfwatch: /, ""); printf "perfwatch \\- %s\n", roff($0) }
  else { first = $0 }
  next
}
/^Usage: / {
  sub(/^Usage: perfwatch ?/, "")
  if (path == "") printf ".SH SYNOPSIS\n.B perfwatch\n%s\n%s", roff($0), intro
  else { printf ".SS \"perfwatch %s\"\n%s\n", roff($0), roff(first) }
  next
}
/^[A-Za-z]+:$/ { flush(); section = substr($0, 1, length($0) - 1); if (path == "" && section != "Subcommands") print ".SH " toupper(section); next }
section == "" { next }
/^      +[^ ]/ { if (term != "") { sub(/^ +/, ""); desc = desc (desc == "" ? "" : " ") $0 }; next }
/^  [^ ]/ {
  flush()
  line = substr($0, 3); if (match(line, /  +/)) { term = substr(line, 1, RSTART - 1); desc = substr(line, RSTART + RLENGTH) }
  else { term = line; desc = "" }
  next
}
{ flush() }
END {
  flush()
  key = path == "" ? "perfwatch" : "perfwatch " path
  printf "[\"%s\"]=\"%s\" ", key, children >> subs
  printf "[\"%s\"]=\"%s\" ", key, options >> opts
  print children > "/dev/stderr"
}'
intro='.SH DESCRIPTION
Every command prints its own part of this page with
.BR \-\-help ;
the full manual is /usr/share/doc/perfwatch/README.md.
'

describe() {
  local path=$1 children child
  children=$(help_of $path | awk -v path="$path" -v intro="$intro" -v subs="$bindir/subs" -v opts="$bindir/opts" \
    -v takes="$bindir/takes" "$describe_awk" 2>&1 >>"$man")
  if [ -z "$path" ]; then echo ".SH COMMANDS" >>"$man"; fi
  for child in $children; do
    describe "${path:+$path }$child"
  done
}
version=$(PATH="$bindir:$PATH" perfwatch --version | awk '{ print $NF }')
printf '.TH PERFWATCH 1 "" "perfwatch %s" "User Commands"\n.SH NAME\n' "$version" >"$man"
: >"$bindir/subs"; : >"$bindir/opts"; : >"$bindir/takes"
describe ""
cat >>"$man" <<'ROFF'
.SH FILES
.TP
.I /etc/perfwatch/config.yaml
The daemon's configuration:
.B perfwatch config check
validates it.
.TP
.I /var/lib/perfwatch
The daemon's database.
.SH SEE ALSO
.BR systemctl (1),
.BR journalctl (1)
ROFF
gzip -9n -f "$man"

{
  echo "# bash completion for perfwatch, generated from its --help by packaging/cli-docs.sh."
  echo "_perfwatch() {"
  echo "    local -A subs=($(cat "$bindir/subs"))"
  echo "    local -A opts=($(cat "$bindir/opts"))"
  echo "    local -A takes=($(cat "$bindir/takes"))"
  cat <<'BASH'
    local cur=${COMP_WORDS[COMP_CWORD]} prev=${COMP_WORDS[COMP_CWORD-1]} cmd=perfwatch i
    COMPREPLY=()
    # The command path so far: words naming a subcommand of the path before them.
    for ((i = 1; i < COMP_CWORD; i++)); do
        if [[ " ${subs[$cmd]-} " == *" ${COMP_WORDS[i]} "* ]]; then cmd+=" ${COMP_WORDS[i]}"; fi
    done
    if [[ -n ${takes["$cmd $prev"]+set} ]]; then
        if [[ -n ${takes["$cmd $prev"]} ]]; then
            mapfile -t COMPREPLY < <(compgen -W "${takes["$cmd $prev"]}" -- "$cur")
        else
            compopt -o filenames 2>/dev/null
            mapfile -t COMPREPLY < <(compgen -f -- "$cur")
        fi
    elif [[ $cur == -* ]]; then
        mapfile -t COMPREPLY < <(compgen -W "${opts[$cmd]-}" -- "$cur")
    elif [[ -n ${subs[$cmd]-} ]]; then
        mapfile -t COMPREPLY < <(compgen -W "${subs[$cmd]}" -- "$cur")
    else
        compopt -o filenames 2>/dev/null
        mapfile -t COMPREPLY < <(compgen -f -- "$cur")
    fi
}
complete -F _perfwatch perfwatch
BASH
} >"$out/perfwatch.bash-completion"
