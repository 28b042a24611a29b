#!/usr/bin/env bash
# Every link in the user-facing Markdown, and every reference in a source
# comment, resolves inside the repository.
#
# Usage: links_test.sh REPO_ROOT
#
# Scans README.md, docs/*.md, bench/README.md, bench/results/*.md and
# models/*/README.md for
#   - Markdown links and images, [text](target) and ![alt](target), and
#     reference definitions, [label]: target (outside fenced code blocks and
#     inline code);
#   - bare references to Markdown files, e.g. `docs/PLAN_FORMAT.md` or
#     docs/PLAN_FORMAT.md#semantics, anywhere in the text.
# and fails, listing FILE:LINE: TARGET: REASON for each, when a target
#   - points outside the repository (a clone has no ../shared);
#   - does not exist, or exists only as a file git ignores (build output);
#   - carries an anchor #... into a Markdown file that has no heading with
#     that GitHub slug (lower case; ASCII letters, digits, spaces, '-' and
#     '_' kept, everything else dropped; each space becomes '-'; a repeated
#     heading gets -1, -2, ...), nor an <a name=...> / id=... of that name.
# Link targets resolve against the file's own directory (a leading '/' means
# the repository root); bare references against the file's directory, then
# the repository root. http(s), mailto and other URLs are not fetched.
#
# Source comments (// and /* */ in every .cc and .h file git tracks) are
# checked the same way for
#   - bare references to Markdown files (docs/PLAN_FORMAT.md#semantics,
#     ALGORITHMS.md), resolved against the file's directory, the repository
#     root, then docs/;
#   - section references to a document by its capitalised name without
#     .md, such as "ECOSYSTEM §3.4": NAME.md must exist in the repository
#     root or docs/;
#   - anything under shared/ (notes beside the repository, not in a clone).
# A comment citing another project's file gives its URL.
set -u

root=${1:?usage: links_test.sh REPO_ROOT}
root=$(cd "$root" && pwd -P) || { echo "links_test: cannot enter '$1'" >&2; exit 2; }
export LC_ALL=C

files=()
for f in "$root/README.md" "$root"/docs/*.md "$root/bench/README.md" "$root"/bench/results/*.md "$root"/models/*/README.md; do
  [[ -f $f ]] && files+=("$f")
done
if [[ ${#files[@]} -eq 0 ]]; then
  echo "links_test: no Markdown files found under $root" >&2
  exit 2
fi

in_git=0
git -C "$root" rev-parse --is-inside-work-tree >/dev/null 2>&1 && in_git=1

# Prints "LINE<TAB>KIND<TAB>TARGET" for every link (KIND link) and bare
# Markdown reference (KIND bare) of the file on stdin.
extract() {
  awk '
    /^[ \t]*(```|~~~)/ { fence = !fence; next }
    {
      line = $0
      if (!fence) {
        t = line
        gsub(/`[^`]*`/, "", t)  # inline code is not a link
        if (match(t, /^[ \t]*\[[^]]+\]:[ \t]+[^ \t]+/)) {
          d = substr(t, RSTART, RLENGTH)
          sub(/^[ \t]*\[[^]]+\]:[ \t]+/, "", d)
          print NR "\tlink\t" d
        }
        while (match(t, /\]\([^)]*\)/)) {
          print NR "\tlink\t" substr(t, RSTART + 2, RLENGTH - 3)
          t = substr(t, RSTART + RLENGTH)
        }
      }
      b = line
      gsub(/\[[^]]*\]\([^)]*\)/, "", b)                            # whole links: checked above
      gsub(/\]\([^)]*\)/, "]", b)                                  # (link text holding a ])
      sub(/^[ \t]*\[[^]]+\]:[ \t]+[^ \t]+/, "", b)                 # reference definitions: same
      gsub(/[A-Za-z][A-Za-z0-9+.-]*:\/\/[^ \t)>"`\]]*/, "", b)     # URLs: not fetched
      while (match(b, /[A-Za-z0-9_.\/-]*[A-Za-z0-9_-]\.md(#[A-Za-z0-9_-]+)?/)) {
        tok = substr(b, RSTART, RLENGTH)
        after = substr(b, RSTART + RLENGTH, 1)
        b = substr(b, RSTART + RLENGTH)
        if (after ~ /[A-Za-z0-9]/) continue  # e.g. foo.mdx
        print NR "\tbare\t" tok
      }
    }'
}

# Prints the anchors of a Markdown file on stdin, one per line: GitHub slugs
# of its ATX and setext headings (outside fenced code), and HTML name/id.
anchors() {
  awk '
    function slug(h,   s, pre, inner) {
      # [text](url) -> text
      while (match(h, /\[[^]]*\]\([^)]*\)/)) {
        pre = substr(h, 1, RSTART - 1)
        inner = substr(h, RSTART, RLENGTH)
        sub(/^\[/, "", inner)
        sub(/\]\([^)]*\)$/, "", inner)
        h = pre inner substr(h, RSTART + RLENGTH)
      }
      gsub(/^[ \t]+|[ \t]+$/, "", h)
      s = tolower(h)
      gsub(/[^a-z0-9 _-]/, "", s)
      gsub(/ /, "-", s)
      return s
    }
    function emit(h,   s) {
      s = slug(h)
      if (s in seen) { seen[s]++; print s "-" seen[s] } else { seen[s] = 0; print s }
    }
    /^[ \t]*(```|~~~)/ { fence = !fence; prev = ""; next }
    fence { next }
    {
      line = $0
      while (match(line, /(name|id)="[^"]+"/)) {
        a = substr(line, RSTART, RLENGTH)
        sub(/^(name|id)="/, "", a)
        sub(/"$/, "", a)
        print a
        line = substr(line, RSTART + RLENGTH)
      }
      if ($0 ~ /^ ? ? ?#+[ \t]/ || $0 ~ /^ ? ? ?#+$/) {
        h = $0
        sub(/^ *#+/, "", h)
        sub(/[ \t]+#+[ \t]*$/, "", h)
        emit(h)
        prev = ""
        next
      }
      if (($0 ~ /^ ? ? ?=+[ \t]*$/ || $0 ~ /^ ? ? ?-+[ \t]*$/) && prev !~ /^[ \t]*$/ && prev !~ /^[ \t]*[-*+|>]/) {
        emit(prev)
        prev = ""
        next
      }
      prev = $0
    }'
}

failures=0
checked=0
fail() {  # FILE LINE TARGET REASON
  echo "${1#"$root"/}:$2: $3: $4"
  failures=$((failures + 1))
}

# Canonical absolute form of a path that may not exist (no symlink lookup
# needed beyond what exists).
canon() { realpath -m -- "$1"; }

for f in "${files[@]}"; do
  dir=$(dirname "$f")
  while IFS=$'\t' read -r lineno kind target; do
    [[ -z $target ]] && continue
    # <target> and [text](target "title")
    target=${target#<}
    target=${target%>}
    target=${target%%[[:space:]]*}
    [[ -z $target ]] && continue
    case $target in
      [A-Za-z]*://* | mailto:*) continue ;;  # not fetched
    esac
    checked=$((checked + 1))
    path=${target%%#*}
    anchor=""
    [[ $target == *#* ]] && anchor=${target#*#}
    path=${path//%20/ }
    if [[ -z $path ]]; then
      resolved=$f  # #anchor into this file
    else
      if [[ $path == /* ]]; then
        resolved=$(canon "$root$path")
      else
        resolved=$(canon "$dir/$path")
        if [[ $kind == bare && ! -e $resolved ]]; then
          alt=$(canon "$root/$path")
          [[ $alt == "$root" || $alt == "$root"/* ]] && [[ -e $alt ]] && resolved=$alt
        fi
      fi
      if [[ $resolved != "$root" && $resolved != "$root"/* ]]; then
        fail "$f" "$lineno" "$target" "points outside the repository (a clone has only the repository)"
        continue
      fi
      if [[ ! -e $resolved ]]; then
        fail "$f" "$lineno" "$target" "no such file or directory in the repository"
        continue
      fi
      if [[ $in_git == 1 && $resolved != "$root" ]] &&
         git -C "$root" check-ignore -q -- "${resolved#"$root"/}" 2>/dev/null; then
        fail "$f" "$lineno" "$target" "is ignored by git (build output is not in a clone)"
        continue
      fi
    fi
    if [[ -n $anchor && $resolved == *.md && -f $resolved ]]; then
      if ! anchors <"$resolved" | grep -qxF -- "$anchor"; then
        fail "$f" "$lineno" "$target" "no heading with anchor '#$anchor' in ${resolved#"$root"/}"
      fi
    fi
  done < <(extract <"$f")
done

# Prints "LINE<TAB>KIND<TAB>TARGET" for the references in the comments of the
# C++ file on stdin: KIND bare (a Markdown file), section (NAME of
# "NAME §"), outside (a shared/ path).
extract_comments() {
  awk '
    {
      line = $0
      text = ""
      if (block) {
        e = index(line, "*/")
        if (e) { text = substr(line, 1, e - 1); block = 0; line = substr(line, e + 2) } else { text = line; line = "" }
      }
      # string literals are not comments ("http://", "// ..." in a message)
      gsub(/"([^"\\]|\\.)*"/, "\"\"", line)
      while (line != "") {
        c = index(line, "//"); b = index(line, "/*")
        if (c && (!b || c < b)) { text = text " " substr(line, c + 2); break }
        if (b) {
          rest = substr(line, b + 2); e = index(rest, "*/")
          if (e) { text = text " " substr(rest, 1, e - 1); line = substr(rest, e + 2); continue }
          text = text " " rest; block = 1
        }
        break
      }
      if (text == "") next
      gsub(/[A-Za-z][A-Za-z0-9+.-]*:\/\/[^ \t)>"`\]]*/, "", text)  # URLs: not fetched
      t = text
      while (match(t, /(\.\.\/)*shared\/[A-Za-z0-9_.\/-]*/)) {
        print NR "\toutside\t" substr(t, RSTART, RLENGTH)
        t = substr(t, RSTART + RLENGTH)
      }
      t = text
      while (match(t, /[A-Z][A-Z_][A-Z_][A-Z_]+[ \t]+(§|#[0-9]|items? [0-9]|avoid|"Avoid")/)) {
        tok = substr(t, RSTART, RLENGTH)
        before = RSTART > 1 ? substr(t, RSTART - 1, 1) : ""
        t = substr(t, RSTART + RLENGTH)
        if (before ~ /[A-Za-z0-9_\/.]/) continue
        sub(/[ \t].*/, "", tok)
        print NR "\tsection\t" tok
      }
      t = text
      while (match(t, /[A-Za-z0-9_.\/-]*[A-Za-z0-9_-]\.md(#[A-Za-z0-9_-]+)?/)) {
        tok = substr(t, RSTART, RLENGTH)
        after = substr(t, RSTART + RLENGTH, 1)
        t = substr(t, RSTART + RLENGTH)
        if (after ~ /[A-Za-z0-9]/) continue
        print NR "\tbare\t" tok
      }
    }'
}

sources=()
if [[ $in_git == 1 ]]; then
  while IFS= read -r f; do [[ -f $root/$f ]] && sources+=("$root/$f"); done < <(git -C "$root" ls-files '*.cc' '*.h')
else
  while IFS= read -r f; do sources+=("$f"); done < <(find "$root" -name '*.cc' -o -name '*.h' | grep -v '/build')
fi
comment_refs=0
for f in "${sources[@]}"; do
  dir=$(dirname "$f")
  while IFS=$'\t' read -r lineno kind target; do
    [[ -z $target ]] && continue
    comment_refs=$((comment_refs + 1))
    case $kind in
      outside)
        fail "$f" "$lineno" "$target" "a comment points outside the repository (a clone has no shared/): restate it or cite docs/"
        ;;
      section)
        if [[ ! -f $root/$target.md && ! -f $root/docs/$target.md ]]; then
          fail "$f" "$lineno" "$target" "a comment cites $target.md, which is not in the repository (root or docs/): restate it or cite docs/"
        fi
        ;;
      bare)
        path=${target%%#*}
        anchor=""
        [[ $target == *#* ]] && anchor=${target#*#}
        resolved=""
        for base in "$dir" "$root" "$root/docs"; do
          cand=$(canon "$base/$path")
          if [[ ($cand == "$root" || $cand == "$root"/*) && -e $cand ]]; then resolved=$cand; break; fi
        done
        if [[ -z $resolved ]]; then
          fail "$f" "$lineno" "$target" "a comment cites a Markdown file that is not in the repository"
          continue
        fi
        if [[ -n $anchor ]] && ! anchors <"$resolved" | grep -qxF -- "$anchor"; then
          fail "$f" "$lineno" "$target" "no heading with anchor '#$anchor' in ${resolved#"$root"/}"
        fi
        ;;
    esac
  done < <(extract_comments <"$f")
done

if [[ $failures -gt 0 ]]; then
  echo "links_test: $failures broken link(s) or comment reference(s) in ${#files[@]} Markdown and ${#sources[@]} source files ($checked links, $comment_refs comment references checked)"
  exit 1
fi
echo "links_test: $checked links in ${#files[@]} Markdown files and $comment_refs references in the comments of ${#sources[@]} source files resolve inside the repository"
