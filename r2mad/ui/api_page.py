"""`/?view=api` opens Gradio's API page. Gradio 6.31 reads `view=api` from the address at start, but draws the
page only once its code was fetched, which it does when the footer's "Use via API" is hovered or pressed: opened
from the address, the flag is set with nothing to draw, and the normal page shows. Our layout, routes and footer
setting are not the cause (footer_links keeps "api"). Here the page, once loaded, presses the footer's button
twice when the address asks for the API page: the first press clears the stale flag, the second fetches the
code and opens it."""
from __future__ import annotations

from typing import Any

OPEN_FROM_ADDRESS = """
async () => {
  if (new URLSearchParams(window.location.search).get("view") !== "api") return;
  for (let i = 0; i < 50 && !document.querySelector("footer button.show-api"); i++)
    await new Promise((done) => setTimeout(done, 100));  // the footer draws after the app, within 5 s
  const button = document.querySelector("footer button.show-api");
  if (!button || document.querySelector(".api-docs")) return;
  button.click();  // clears the flag set from the address
  await new Promise((done) => setTimeout(done, 50));
  button.click();  // fetches the API page's code and opens it
}
"""


def open_from_address(demo: Any) -> None:
    """Make `/?view=api` open the API page (call inside `with demo:`)."""
    demo.load(None, None, None, js=OPEN_FROM_ADDRESS, api_visibility="private", queue=False)
