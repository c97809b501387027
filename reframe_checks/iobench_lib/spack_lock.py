"""The one reader of a Spack environment's ``spack.lock``: the build fixture (spack_build.py)
asks where iobench's sources were, the gate (gate/spack.py) which versions differ. It imports
no ReFrame, so the gate reads locks without loading the checks' machinery."""
import json
import os


def nodes(env_dir):
    """The concrete specs of ``env_dir``/spack.lock (dicts as Spack writes them), or None when
    there is no readable lock."""
    try:
        with open(os.path.join(env_dir, 'spack.lock')) as fp:
            return list(json.load(fp)['concrete_specs'].values())
    except (OSError, ValueError, KeyError, AttributeError):
        return None


def versions(env_dir):
    """{package: version} of the lock's concrete specs, or None."""
    specs = nodes(env_dir)
    return None if specs is None else {n['name']: str(n['version']) for n in specs}


def dev_path(env_dir):
    """dev_path of iobench in the lock, or None (no lock / no iobench)."""
    return next((n.get('parameters', {}).get('dev_path') for n in nodes(env_dir) or ()
                 if n.get('name') == 'iobench'), None)
