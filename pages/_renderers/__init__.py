"""Custom participant-step renderers, one module per display (``Step.template`` names them).

Each module registers itself with ``pages._step_displays.register_step_renderer(name)``; importing this
package imports them all, so a new display needs no wiring.
"""

import importlib
import pkgutil

for _info in pkgutil.iter_modules(__path__, prefix=f"{__name__}."):
    importlib.import_module(_info.name)
