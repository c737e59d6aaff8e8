// Built without Open MPI (SYLVA_WITH_MPI off or not found): the MPI engine
// says how to get it.
#include "sylva/core/error.h"
#include "sylva/dist/communicator.h"

namespace sylva::dist {

bool mpi_available() { return false; }

std::unique_ptr<Communicator> mpi_communicator(CommOptions) {
  SYLVA_THROW("[dist] this Sylva was built without MPI: install Open MPI (apt install libopenmpi-dev openmpi-bin) "
              "and configure with -DSYLVA_WITH_MPI=ON");
}

}  // namespace sylva::dist
