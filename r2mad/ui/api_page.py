"""`/?view=api` opens Gradio's API page. Gradio 6.31 reads `view=api` from the address at start, but draws the
page only once its code was fetched, which it does when the footer's "Use via API" is hovered or pressed: opened
from the address, the flag is set with nothing to draw, and the normal page shows. Our layout, routes and footer
setting are not the cause (footer_links keeps "api"). Here the page, once loaded, presses the footer's button
when the address asks for the API page, once more if the first press only cleared the flag."""
from __future__ import annotations

from typing import Any

OPEN_FROM_ADDRESS = """
async () => {
  if (new URLSearchParams(window.location.search).get("view") !== "api") return;
  const sleep = (ms) => new Promise((done) => setTimeout(done, ms));
  const opened = () => document.querySelector(".api-docs");
  for (let i = 0; i < 300 && !document.querySelector("footer button.show-api"); i++)
    await sleep(100);  // the footer draws after the app: within 30 s on a busy machine
  const button = document.querySelector("footer button.show-api");
  // One press at a time: the first either opens the page or clears the flag the address set (whether Gradio
  // has read the address yet is a race); then wait for the page before pressing again.
  for (let tries = 0; button && tries < 4 && !opened(); tries++) {
    button.click();
    for (let i = 0; i < 80 && !opened(); i++) await sleep(100);
  }
}
"""


def open_from_address(demo: Any) -> None:
    """Make `/?view=api` open the API page (call inside `with demo:`)."""
    demo.load(None, None, None, js=OPEN_FROM_ADDRESS, api_visibility="private", queue=False)
