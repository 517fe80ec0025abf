# bash completion for s3rdma (the CLI of docs/cli.md): verbs, options, the
# values of --transport and --profile, local paths, and s3://BUCKET/KEY
# paths, listed from the server with "s3rdma ls" under the endpoint and
# credentials options already on the line (HTTP only, at most 3 s).
# Installed to PREFIX/share/bash-completion/completions/s3rdma; without the
# bash-completion package: source this file from ~/.bashrc.
# zsh: autoload -U bashcompinit && bashcompinit, then source this file.

_s3rdma_verbs="mb rb ls cp mv put get rm stat presign sync help"
# Options that take a value (the next word), then those that do not.
_s3rdma_value_opts="--endpoint-url --endpoint --profile --access-key --secret-key --region
    --ca-bundle --rdma-endpoint --transport --rdma-threshold --part-size --content-type --storage-class --meta --expires-in
    --version-id"
_s3rdma_flag_opts="--no-fallback --no-sign-request --recursive -r --force --quiet -q --no-progress --verbose -v
    --stats --help -h --version --versions"
# The options that say which server and which user: passed on to the listing.
_s3rdma_conn_opts="--endpoint-url --endpoint --profile --access-key --secret-key --region --ca-bundle"

# Adds to COMPREPLY the s3:// URLs the server has under the URL prefix $1
# (buckets, or the keys and PRE prefixes of the prefix's "directory").
# $2... are the connection options from the command line.
_s3rdma_remote()
{
    local url=$1
    shift
    local path=${url#s3://} line name dir
    local -a listing
    if [[ $path != */* ]]; then
        # ls without an argument: "DATE TIME BUCKET" lines.
        mapfile -t listing < <(timeout 3 s3rdma "$@" --transport http ls 2>/dev/null)
        for line in "${listing[@]}"; do
            name=${line#* * }
            [[ s3://$name/ == "$url"* ]] && COMPREPLY+=("s3://$name/")
        done
        return
    fi
    # ls s3://BUCKET/PREFIX: "PRE NAME/" and "DATE TIME SIZE NAME" lines, names
    # relative to the prefix's part up to its last slash.
    dir=${url%/*}/
    mapfile -t listing < <(timeout 3 s3rdma "$@" --transport http ls "$url" 2>/dev/null)
    local re_pre='^ *PRE (.*)$' re_obj='^[^ ]+ +[^ ]+ +[0-9]+ (.*)$'
    for line in "${listing[@]}"; do
        if [[ $line =~ $re_pre || $line =~ $re_obj ]]; then
            name=$dir${BASH_REMATCH[1]}
            [[ $name == "$url"* ]] && COMPREPLY+=("$name")
        fi
    done
}

_s3rdma()
{
    COMPREPLY=()
    # The word being completed, whole: bash splits s3://b/k at the colon
    # (COMP_WORDBREAKS), so take it from the line instead.
    local line=${COMP_LINE:0:COMP_POINT}
    local cur=${line##*[[:space:]]}
    local -a words conn
    read -r -a words <<<"${line%"$cur"}"
    local prev=${words[${#words[@]} - 1]}

    # The verb (first word that is neither an option nor an option's value)
    # and the connection options, from the words before the current one.
    local verb="" i w
    for ((i = 1; i < ${#words[@]}; i++)); do
        w=${words[i]}
        if [[ " "$_s3rdma_value_opts" " == *[[:space:]]"$w"[[:space:]]* ]]; then
            [[ " "$_s3rdma_conn_opts" " == *" $w "* ]] && conn+=("$w" "${words[i + 1]}")
            ((i++))
        elif [[ $w != -* && -z $verb ]]; then
            verb=$w
        fi
    done

    case $prev in
    --ca-bundle)
        mapfile -t COMPREPLY < <(compgen -f -- "$cur")
        return
        ;;
    --transport)
        mapfile -t COMPREPLY < <(compgen -W "http token native auto" -- "$cur")
        return
        ;;
    --profile)
        local profiles
        profiles=$(sed -n 's/^\[\(profile \)\{0,1\}\([^]]*\)\].*/\2/p' \
            "${AWS_SHARED_CREDENTIALS_FILE:-$HOME/.aws/credentials}" \
            "${AWS_CONFIG_FILE:-$HOME/.aws/config}" 2>/dev/null | sort -u)
        mapfile -t COMPREPLY < <(compgen -W "$profiles" -- "$cur")
        return
        ;;
    --endpoint-url | --endpoint | --access-key | --secret-key | --region | --rdma-endpoint | \
        --rdma-threshold | --part-size | --content-type | --storage-class | --meta | --expires-in)
        return # a value of the user's own
        ;;
    esac

    if [[ $cur == -* ]]; then
        mapfile -t COMPREPLY < <(compgen -W "$_s3rdma_value_opts $_s3rdma_flag_opts" -- "$cur")
        return
    fi
    if [[ -z $verb ]]; then
        mapfile -t COMPREPLY < <(compgen -W "$_s3rdma_verbs" -- "$cur")
        return
    fi

    local remote_only=0
    case $verb in
    help)
        mapfile -t COMPREPLY < <(compgen -W "$_s3rdma_verbs" -- "$cur")
        return
        ;;
    mb | rb | ls | rm | stat | presign) remote_only=1 ;;
    esac
    if [[ $cur == s3:* ]]; then
        [[ $cur == s3://* ]] && _s3rdma_remote "$cur" "${conn[@]}"
        [[ ${#COMPREPLY[@]} -eq 0 && $cur != s3://*/* ]] && COMPREPLY=("s3://")
        compopt -o nospace 2>/dev/null
        # Bash replaces only the part after the last colon.
        local strip=${cur%"${cur##*:}"} j
        for j in "${!COMPREPLY[@]}"; do
            COMPREPLY[j]=${COMPREPLY[j]#"$strip"}
        done
    elif ((remote_only)); then
        [[ s3:// == "$cur"* ]] && COMPREPLY=("s3://") && compopt -o nospace 2>/dev/null
    else
        compopt -o filenames 2>/dev/null
        mapfile -t COMPREPLY < <(compgen -f -- "$cur")
        [[ s3:// == "$cur"* && -n $cur ]] && COMPREPLY+=("s3://")
    fi
}
complete -F _s3rdma s3rdma
